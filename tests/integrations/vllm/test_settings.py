"""The connector's settings (``kv_connector_extra_config``), its refusals and a request's
namespace, without vLLM: defaults, every key, and a clear error naming the key or setting."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from radixkv.integrations.vllm.keys import cacheable, namespace_of
from radixkv.integrations.vllm.settings import ConnectorSettings
from radixkv.integrations.vllm.support import UnsupportedConfiguration, check_supported


def test_defaults_are_vllms_block_size_and_kv_capacity_and_no_tiers() -> None:
    settings = ConnectorSettings.from_extra(None, 32, 8192)
    assert settings == ConnectorSettings(8192, 32, "lru")
    assert settings.host_tokens is None and settings.storage is None


def test_every_key_is_read_and_sizes_are_cut_to_whole_pages() -> None:
    settings = ConnectorSettings.from_extra(
        {"capacity_tokens": 1000, "page_size": 16, "eviction_policy": "lfu",
         "host_tokens": 4100, "host_write_policy": "write_back",
         "storage": "redis://:secret@10.0.0.5:6380/2", "storage_prefix": "fleet",
         "storage_model": "llama@rev1", "storage_wait": "wait_complete",
         "storage_timeout_s": 0.25, "prefetch_threshold": 64}, 32, 8192)
    assert settings == ConnectorSettings(
        capacity=992, page_size=16, policy="lfu", host_tokens=4096,
        write_policy="write_back", storage="redis://:secret@10.0.0.5:6380/2",
        storage_prefix="fleet", storage_model="llama@rev1", wait_policy="wait_complete",
        timeout_s=0.25, prefetch_threshold=64)


@pytest.mark.parametrize("extra, words", [
    ({"capacity_tokens": 0}, "capacity_tokens=0 is not an int >= 1"),
    ({"capacity_tokens": "lots"}, "capacity_tokens='lots' is not an int >= 1"),
    ({"page_size": True}, "page_size=True is not an int >= 1"),
    ({"capacity_tokens": 8, "page_size": 16}, "capacity_tokens=8 is less than one page"),
    ({"host_tokens": 8, "page_size": 16}, "host_tokens=8 is less than one page of 16"),
    ({"eviction_policy": "random"}, "eviction_policy='random': one of"),
    ({"host_write_policy": "sometimes"}, "host_write_policy='sometimes': one of"),
    ({"host_tokens": 64, "storage": "s3://bucket"}, "storage='s3://bucket': redis://"),
    ({"storage": "file:///tmp/l3"}, "storage needs a host tier (host_tokens)"),
    ({"storage_timeout_s": 0}, "storage_timeout_s=0 is not seconds > 0"),
    ({"hosts": 64}, "unknown key(s) ['hosts']"),
])
def test_a_bad_value_names_its_key(extra: dict[str, object], words: str) -> None:
    with pytest.raises(UnsupportedConfiguration) as raised:
        ConnectorSettings.from_extra(extra, 32, 8192)
    assert words in str(raised.value)


def _config(**overrides: object) -> tuple[NS, NS]:
    spec = type("FullAttentionSpec", (), {"block_size": 32})()
    vllm = NS(scheduler_config=NS(async_scheduling=False), speculative_config=None,
              parallel_config=NS(pipeline_parallel_size=1))
    kv = NS(kv_cache_groups=[NS(kv_cache_spec=spec)], num_blocks=64)
    for name, value in overrides.items():
        target = kv if name == "kv_cache_groups" else vllm
        setattr(target, name, value)
    return vllm, kv


def test_a_plain_decoder_with_synchronous_scheduling_is_supported() -> None:
    check_supported(*_config())


@pytest.mark.parametrize("overrides, words", [
    ({"scheduler_config": NS(async_scheduling=True)}, "async scheduling"),
    ({"speculative_config": object()}, "speculative decoding"),
    ({"parallel_config": NS(pipeline_parallel_size=2)}, "pipeline parallelism"),
    ({"kv_cache_groups": [NS(), NS()]}, "2 KV cache groups"),
    ({"kv_cache_groups": [NS(kv_cache_spec=type("MambaSpec", (), {})())]},
     "KV cache spec MambaSpec"),
])
def test_unsupported_configurations_are_refused(overrides: dict[str, object],
                                                words: str) -> None:
    with pytest.raises(UnsupportedConfiguration) as raised:
        check_supported(*_config(**overrides))
    assert words in str(raised.value)


def test_a_requests_namespace_is_its_adapter_and_salt() -> None:
    assert namespace_of(NS(lora_request=None, cache_salt=None)) is None
    assert namespace_of(NS(lora_request=None, cache_salt="")) is None
    assert namespace_of(NS(lora_request=NS(lora_name="sql"), cache_salt=None)) == ("sql", None)
    assert namespace_of(NS(lora_request=None, cache_salt="t1")) == (None, "t1")


def test_only_token_prompts_without_multimodal_inputs_are_cacheable() -> None:
    assert cacheable(NS(prompt_token_ids=[1, 2], prompt_embeds=None, mm_features=None))
    assert not cacheable(NS(prompt_token_ids=None))
    assert not cacheable(NS(prompt_token_ids=[1], prompt_embeds=object(), mm_features=None))
    assert not cacheable(NS(prompt_token_ids=[1], prompt_embeds=None, mm_features=[object()]))
