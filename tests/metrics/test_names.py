"""The metric table and the presets: unique names, the vLLM and SGLang conventions, user
labels that cannot shadow radixkv's own, and the collector's checks."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client", reason="prometheus-client is not installed "
                    "(pip install -e '.[metrics]')")

from prometheus_client.registry import CollectorRegistry

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import ConfigError, InvalidArgumentTypeError
from radixkv.metrics import (
    CACHE_METRICS,
    HOST_METRICS,
    PRESETS,
    PUBLISHER_METRICS,
    STORAGE_METRICS,
    CacheCollector,
    MetricsExporter,
)

SPECS = CACHE_METRICS + HOST_METRICS + STORAGE_METRICS + PUBLISHER_METRICS


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_metric_has_one_unique_name_under_the_presets_prefix(name: str) -> None:
    preset = PRESETS[name]
    names = [preset.metric(spec.key) for spec in SPECS]
    assert len(set(names)) == len(SPECS)
    assert all(n.startswith(f"{name}:") for n in names)


def test_the_presets_use_the_names_existing_dashboards_query() -> None:
    vllm, sglang = PRESETS["vllm"], PRESETS["sglang"]
    assert [vllm.metric(k) for k in ("queries", "hits", "usage")] == [
        "vllm:prefix_cache_queries", "vllm:prefix_cache_hits", "vllm:kv_cache_usage_perc"]
    assert [sglang.metric(k) for k in ("hits", "hit_rate", "usage")] == [
        "sglang:cached_tokens", "sglang:cache_hit_rate", "sglang:token_usage"]
    assert (vllm.label("tier"), sglang.label("tier")) == ("tier", "cache_source")


@pytest.mark.parametrize("labels", [{"component": "x"}, {"cache_source": "x"},
                                    {"bad-name": "x"}, {"__x": "y"}, {"rank": 0}, ["a"]])
def test_user_labels_are_checked(labels: object) -> None:
    cache = PrefixCache(CacheConfig(capacity=8))
    preset = "sglang" if labels == {"cache_source": "x"} else "vllm"
    with pytest.raises(ConfigError):
        CacheCollector(cache, preset_name=preset, labels=labels)  # type: ignore[arg-type]


def test_the_collector_rejects_what_is_not_a_cache_or_a_preset() -> None:
    with pytest.raises(InvalidArgumentTypeError):
        CacheCollector(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        CacheCollector(PrefixCache(CacheConfig(capacity=8)), preset_name="tgi")


def test_describe_names_every_family_without_reading_stats() -> None:
    class Counting(PrefixCache):
        reads = 0

        def stats(self):  # type: ignore[no-untyped-def]
            Counting.reads += 1
            return super().stats()

    cache = Counting(CacheConfig(capacity=8))
    collector = CacheCollector(cache, labels={"model_name": "m"})
    CollectorRegistry().register(collector)
    assert Counting.reads == 0
    assert [f.name for f in collector.describe()] == [
        PRESETS["vllm"].metric(spec.key) for spec in CACHE_METRICS]
    assert len(list(collector.collect())) == len(CACHE_METRICS) and Counting.reads == 1


def test_a_cache_with_a_host_tier_describes_and_collects_the_host_families_too() -> None:
    from radixkv.host import HostTier

    collector = CacheCollector(PrefixCache(CacheConfig(capacity=8, host=HostTier(capacity=8))))
    names = [PRESETS["vllm"].metric(spec.key) for spec in CACHE_METRICS + HOST_METRICS]
    assert [f.name for f in collector.describe()] == names
    assert [f.name for f in collector.collect()] == names
    plain = CacheCollector(PrefixCache(CacheConfig(capacity=8)))
    assert len(list(plain.collect())) == len(CACHE_METRICS)


def test_the_exporter_checks_its_port_and_frees_it() -> None:
    with pytest.raises(ConfigError):
        MetricsExporter(port=70000)
    with MetricsExporter() as first:
        port = first.port
        with pytest.raises(ConfigError):
            MetricsExporter(port=port)
    with MetricsExporter(port=port) as again:
        assert again.port == port
