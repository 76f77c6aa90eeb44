"""The conformance kit on every built-in component, and on components it must refuse."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from radixkv import (
    CacheConfig,
    ChunkedLocal,
    ComponentSpec,
    FullAttention,
    Mamba,
    Node,
    PrefixCache,
    SlidingWindow,
    WindowedComponent,
    register_component,
)
from radixkv.components.base import PathAdoption, per_token_path_adoption
from radixkv.components.full import FullComponent
from radixkv.errors import ConfigError
from radixkv.testing import ComponentCheckError, check_component
from radixkv.testing.flags import check_flags

EXAMPLES = 20


@pytest.mark.parametrize("spec", [FullAttention(), SlidingWindow(window=4),
                                  Mamba(track_interval=4, states=6)], ids=lambda s: s.name)
def test_every_built_in_component_passes_the_kit(spec: ComponentSpec) -> None:
    check_component(spec, max_examples=EXAMPLES)


def test_chunked_local_passes_the_kit() -> None:
    # more examples than elsewhere: the revival gap it once found (test_kit_findings.py)
    # must stay covered whatever modules are loaded (hypothesis mixes in their constants)
    check_component(ChunkedLocal(chunk=4), with_components=[(), (SlidingWindow(window=3),)],
                    max_examples=60, shrink_seconds=5)


# ---------------------------------------------------------------------- components that lie


@dataclass(frozen=True)
class Blind(ComponentSpec):
    """A sliding window of 2 whose usable_length never looks at tombstones."""

    name: ClassVar[str] = "blind_window"
    windowed: ClassVar[bool] = True


class BlindComponent(WindowedComponent):
    def window_start(self, length: int) -> int:
        return max(0, length - 2)

    def usable_length(self, path: Sequence[Node], length: int) -> int:
        return length


@dataclass(frozen=True)
class EndPinner(ComponentSpec):
    """A sliding window of 8 that claims its locks pin only the node they end in."""

    name: ClassVar[str] = "end_pinner"
    windowed: ClassVar[bool] = True


class EndPinnerComponent(BlindComponent):
    pins_end_node = True

    def window_start(self, length: int) -> int:
        return max(0, length - 8)


@dataclass(frozen=True)
class Borrower(ComponentSpec):
    """A per-token component that claims to adopt past ``borrowed`` only, but hands back
    the borrowed prefix's slots as duplicates."""

    name: ClassVar[str] = "borrower"


class BorrowerComponent(FullComponent):
    def adopt_path(self, path: Sequence[Node], data: object, borrowed: int) -> PathAdoption:
        assert isinstance(data, np.ndarray)
        return per_token_path_adoption(path, self.index, data, 0)


register_component(Blind, BlindComponent)
register_component(EndPinner, EndPinnerComponent)
register_component(Borrower, BorrowerComponent)


def test_a_component_that_ignores_its_tombstones_fails_with_the_minimal_example() -> None:
    with pytest.raises(ComponentCheckError) as failure:
        check_component(Blind(), page_sizes=(1,), with_components=[()], max_examples=50,
                        shrink_seconds=5)
    assert isinstance(failure.value, AssertionError)
    message = str(failure.value)
    assert message.startswith("state machine of full+blind_window at page size 1: ")
    assert "state = FullBlind_windowPage1Machine()" in message  # the steps to replay
    assert "state.teardown()" in message


def test_a_flag_that_disagrees_with_its_hook_is_caught_on_the_tree() -> None:
    cache = PrefixCache(CacheConfig(capacity=64, components=(FullAttention(), EndPinner())))
    cache.finish(cache.admit(list(range(12))))
    cache.finish(cache.admit([*range(6), 9, 9]))  # [0, 6) and two leaves
    with pytest.raises(AssertionError, match="pins_end_node"):
        check_flags(cache)


def test_a_component_adopting_from_the_borrowed_prefix_is_caught_on_the_tree() -> None:
    cache = PrefixCache(CacheConfig(capacity=64, components=(FullAttention(), Borrower())))
    cache.finish(cache.admit(list(range(12))))
    cache.finish(cache.admit([*range(6), 9, 9]))
    with pytest.raises(AssertionError, match="adopts_past_borrowed"):
        check_flags(cache)


def test_the_built_in_adoptions_pass_the_adoption_check() -> None:
    for spec in (FullAttention(), SlidingWindow(window=4), ChunkedLocal(chunk=4)):
        components = (FullAttention(),) if spec.name == "full" else (FullAttention(), spec)
        cache = PrefixCache(CacheConfig(capacity=64, components=components))
        cache.finish(cache.admit(list(range(12))))
        cache.finish(cache.admit([*range(6), 9, 9]))
        check_flags(cache)


def test_a_combination_that_cannot_form_a_cache_is_refused_before_running() -> None:
    with pytest.raises(ConfigError, match="multiple of page_size"):
        check_component(ChunkedLocal(chunk=2), page_sizes=(4,))
    with pytest.raises(ConfigError, match="at most one state component"):
        check_component(Mamba(track_interval=4), with_components=[(Mamba(track_interval=8),)])
