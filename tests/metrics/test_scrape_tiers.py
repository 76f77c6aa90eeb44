"""The real scrape of a cache with a host tier: the host's series are there from the start
at zero, and after backups, demotion, load-backs, failed copies, host eviction and a skipped
backup every scraped value equals ``stats()`` (both presets)."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client", reason="prometheus-client is not installed "
                    "(pip install -e '.[metrics]')")

from radixkv import CacheConfig, LeaseState, PrefixCache
from radixkv.host import HostTier, NumpyCopyConfig, NumpyCopyEngine
from radixkv.metrics import CacheCollector, MetricsExporter

from .test_scrape import USER, expected_vllm, key, scrape

A = list(range(20))
B = [*range(8), *range(50, 62)]


def tiered(engine: NumpyCopyEngine, host: int = 32) -> PrefixCache:
    return PrefixCache(CacheConfig(
        capacity=48, page_size=2, components=("full", "swa", "mamba"), sliding_window=4,
        mamba_track_interval=2, mamba_states=16, host=HostTier(capacity=host, states=8)),
        engine)


def run(cache: PrefixCache, tokens: list[int], load_back: bool = False) -> LeaseState:
    lease = cache.admit(tokens, load_back=load_back)
    cache.wait(lease)
    if lease.state is LeaseState.ACTIVE:
        first = (lease.cached_length // 4 + 1) * 4
        for position in range(first, len(tokens) + 1, 4):
            cache.checkpoint(lease, position)
        cache.finish(lease)
    cache.check_invariants()
    return lease.state


def test_the_host_series_are_there_from_the_start_at_zero() -> None:
    cache = tiered(NumpyCopyEngine())
    with MetricsExporter(CacheCollector(cache, labels=USER)) as exporter:
        first = scrape(exporter.url)
    assert first == expected_vllm(cache)
    host = {k: v for k, v in first.items() if dict(k[1]).get("tier") == "host"
            or "_tier_" in k[0] or "load_back" in k[0]}
    # hits; per component: 3 evictions, usage, 2 pool states, 2 cached states, 2 copied;
    # batches and failures by direction; in flight, skipped, engine faults, load-back requests
    assert len(host) == 1 + 3 * (3 + 1 + 2 + 2 + 2) + 2 + 2 + 4
    free = {k: v for k, v in host.items() if dict(k[1]).get("state") == "free"}
    assert sorted(free.values()) == [8.0, 32.0, 32.0]  # host capacities: nothing used yet
    assert {v for k, v in host.items() if k not in free} == {0.0}
    assert not [k for k in first if dict(k[1]).get("tier") not in (None, "device", "host")]


def test_a_scrape_after_host_traffic_equals_stats() -> None:
    engine = NumpyCopyEngine(NumpyCopyConfig(delay_polls=1))
    cache = tiered(engine)
    with MetricsExporter(CacheCollector(cache, labels=USER)) as exporter:
        run(cache, A)  # write_through: backed up
        cache.poll()
        first = scrape(exporter.url)
        assert first == expected_vllm(cache)
        assert first[key("vllm:kv_cache_tier_copies_in_flight")] == 1  # not acknowledged yet
        cache.wait()
        cache.evict(full=48)  # demoted: everything is host-only now
        assert run(cache, [*A[:12], 99, 98], load_back=True) is LeaseState.FINISHED
        lease = cache.admit(B, load_back=True)  # its load-back will fail
        (ticket,) = lease.waiting
        engine.fail(ticket)
        cache.wait(lease)
        assert lease.state is LeaseState.FAILED
        run(cache, list(range(200, 230)))  # its backup needs host room: host eviction
        cache.wait()
        small = tiered(NumpyCopyEngine(), host=4)  # no room for any backup of A
        run(small, A)
        seen = scrape(exporter.url)
        with MetricsExporter(CacheCollector(small, labels=USER)) as other:
            assert scrape(other.url) == expected_vllm(small)
    assert seen == expected_vllm(cache)
    host = cache.stats().host
    assert host is not None and host.host_hit_tokens > 0 and host.failed_loads == 1
    assert seen[key("vllm:prefix_cache_hits_total", tier="host")] == host.host_hit_tokens
    assert seen[key("vllm:kv_cache_tier_copied_total", component="full",
                    direction="host_to_device")] > 0
    assert seen[key("vllm:prefix_cache_evictions_total", component="full", tier="host",
                    reason="budget")] == host.components["full"].evicted["budget"] > 0
    assert small.stats().host.skipped_backups == 1  # type: ignore[union-attr]


def test_the_sglang_preset_splits_cached_tokens_by_cache_source() -> None:
    cache = tiered(NumpyCopyEngine())
    run(cache, A)
    cache.poll()
    cache.evict(full=48)
    run(cache, [*A[:12], 7], load_back=True)
    with MetricsExporter(CacheCollector(cache, preset_name="sglang", labels=USER)) as exp:
        seen = scrape(exp.url)
    s = cache.stats()
    assert s.host is not None and s.host.host_hit_tokens > 0
    assert seen[key("sglang:cached_tokens_total", cache_source="host")] == (
        s.host.host_hit_tokens)
    assert seen[key("sglang:cached_tokens_total", cache_source="device")] == (
        s.hit_tokens - s.host.host_hit_tokens)
    assert seen[key("sglang:token_usage", component="full", cache_source="host")] == (
        1 - s.host.components["full"].pool_available / 32)
    assert seen[key("sglang:kv_cache_tier_copy_batches_total", direction="host_to_device")] \
        == s.host.load_batches == 1
