"""The SGLang backend's tier settings, read from the environment: defaults, every variable,
store URLs, and a clear error naming the variable for each bad value (no SGLang needed)."""

from __future__ import annotations

import pytest

from radixkv.integrations.sglang.settings import TierSettings
from radixkv.integrations.sglang.support import UnsupportedConfiguration

P = "RADIXKV_SGLANG_"


def test_no_variables_mean_no_tier_below_the_device() -> None:
    settings = TierSettings.from_env({})
    assert settings == TierSettings()
    assert settings.host_tokens is None and settings.storage is None


def test_every_variable_is_read() -> None:
    settings = TierSettings.from_env({
        P + "HOST_TOKENS": "4096", P + "HOST_WRITE_POLICY": "write_back",
        P + "STORAGE": "redis://:secret@10.0.0.5:6380/2", P + "STORAGE_PREFIX": "fleet",
        P + "STORAGE_MODEL": "llama@rev1", P + "STORAGE_WAIT": "wait_complete",
        P + "STORAGE_TIMEOUT_S": "0.25", P + "PREFETCH_THRESHOLD": "64"})
    assert settings == TierSettings(host_tokens=4096, write_policy="write_back",
                                    storage="redis://:secret@10.0.0.5:6380/2", prefix="fleet",
                                    model="llama@rev1", wait_policy="wait_complete",
                                    timeout_s=0.25, prefetch_threshold=64)


def test_zero_host_tokens_is_off() -> None:
    assert TierSettings.from_env({P + "HOST_TOKENS": "0"}).host_tokens is None


@pytest.mark.parametrize("name, value, words", [
    ("HOST_TOKENS", "lots", "HOST_TOKENS='lots' is not an int"),
    ("HOST_TOKENS", "-4", "HOST_TOKENS='-4' is not an int"),
    ("HOST_WRITE_POLICY", "sometimes", "HOST_WRITE_POLICY='sometimes': one of"),
    ("STORAGE_WAIT", "forever", "STORAGE_WAIT='forever': one of"),
    ("STORAGE_TIMEOUT_S", "0", "STORAGE_TIMEOUT_S='0' is not seconds"),
    ("STORAGE_TIMEOUT_S", "inf", "STORAGE_TIMEOUT_S='inf' is not seconds"),
    ("PREFETCH_THRESHOLD", "1.5", "PREFETCH_THRESHOLD='1.5' is not an int"),
    ("STORAGE", "s3://bucket", "the scheme must be"),
    ("STORAGE", "redis://host:port", "STORAGE='redis://host:port'"),
    ("STORAGE", "redis://127.0.0.1/x", "STORAGE='redis://127.0.0.1/x'"),
    ("STORAGE", "redis+unix://", "no socket path"),
    ("STORAGE", "file://", "needs a path"),
])
def test_a_bad_value_names_its_variable(name: str, value: str, words: str) -> None:
    env = {P + "HOST_TOKENS": "64", P + name: value}
    with pytest.raises(UnsupportedConfiguration, match=words):
        TierSettings.from_env(env)


def test_storage_needs_a_host_tier() -> None:
    with pytest.raises(UnsupportedConfiguration, match="needs a host tier"):
        TierSettings.from_env({P + "STORAGE": "file:///tmp/kv"})


def test_host_tokens_must_be_whole_pages() -> None:
    settings = TierSettings.from_env({P + "HOST_TOKENS": "100"})
    settings.check_page(4)
    with pytest.raises(UnsupportedConfiguration, match="not a multiple of the page size 16"):
        settings.check_page(16)
