"""CacheConfig checks ``mamba_states`` even on a cache without Mamba (issue #33: ``"x"`` was
accepted until the day Mamba was added)."""

from __future__ import annotations

import pytest

from radixkv import CacheConfig
from radixkv.errors import ConfigError


@pytest.mark.parametrize("states", ["x", 0, -1, 2.5, True, None])
def test_mamba_states_is_checked_without_mamba(states: object) -> None:
    with pytest.raises(ConfigError, match="mamba_states must be"):
        CacheConfig(capacity=64, page_size=4, mamba_states=states)  # type: ignore[arg-type]


def test_a_cache_without_mamba_keeps_the_default_mamba_states() -> None:
    assert CacheConfig(capacity=64, page_size=4, mamba_states=8).mamba_states == 8
