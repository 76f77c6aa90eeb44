"""The real scrape: the exporter serves on loopback, a cache is driven, ``/metrics`` is
fetched over HTTP and parsed with prometheus-client's own text parser, and every value must
equal what ``stats()`` (and the publisher's ``stats()``) says."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

pytest.importorskip("prometheus_client", reason="prometheus-client is not installed "
                    "(pip install -e '.[metrics]')")

from prometheus_client.parser import text_string_to_metric_families

from radixkv import CacheConfig, PrefixCache
from radixkv.metrics import CacheCollector, MetricsExporter

USER = {"model_name": "tiny", "engine": "e0"}
Scraped = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Scraped:
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    out: Scraped = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = {k: v for k, v in sample.labels.items() if k not in USER}
            assert {k: sample.labels[k] for k in USER} == USER, sample
            out[(sample.name, frozenset(labels.items()))] = sample.value
    return out


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return (name, frozenset(labels.items()))


def expected_vllm(cache: PrefixCache) -> Scraped:
    """What the vLLM preset must show, written out from stats() by hand."""
    s = cache.stats()
    want = {
        key("vllm:prefix_cache_queries_total"): s.match_tokens,
        key("vllm:prefix_cache_hits_total", tier="device"):
            s.hit_tokens - (0 if s.host is None else s.host.host_hit_tokens),
        key("vllm:prefix_cache_lost_tokens_total", component="all", reason="max_match"):
            s.capped_tokens,
        key("vllm:prefix_cache_lost_tokens_total", component="all", reason="unseen"):
            s.unseen_tokens,
        key("vllm:prefix_cache_inserted_tokens_total"): s.inserted_tokens,
        key("vllm:prefix_cache_requests_total", outcome="admitted"): s.admitted,
        key("vllm:prefix_cache_requests_total", outcome="finished"): s.finished,
        key("vllm:prefix_cache_requests_total", outcome="aborted"): s.aborted,
        key("vllm:prefix_cache_checkpoints_total", use="created"): s.checkpoints_created,
        key("vllm:prefix_cache_checkpoints_total", use="used"): s.checkpoints_used,
        key("vllm:prefix_cache_events_dropped_total"): s.events_dropped,
        key("vllm:prefix_cache_hit_rate"): s.hit_rate,
        key("vllm:prefix_cache_held_by_requests"): s.held_by_requests,
        key("vllm:prefix_cache_active_leases"): s.active_leases,
        key("vllm:prefix_cache_nodes"): s.nodes,
    }
    reasons = {"full": "evicted", "swa": "tombstone", "mamba": "no_state"}
    for kind, c in s.components.items():
        want[key("vllm:prefix_cache_lost_tokens_total", component=kind,
                 reason=reasons[kind])] = c.lost
    tiers = [("device", s.components)] + ([] if s.host is None else [("host",
                                                                       s.host.components)])
    for tier, components in tiers:
        for kind, c in components.items():
            for reason in ("budget", "cascade", "removal"):
                want[key("vllm:prefix_cache_evictions_total", component=kind, tier=tier,
                         reason=reason)] = c.evicted[reason]
            used = c.pool_capacity - c.pool_available
            want[key("vllm:kv_cache_usage_perc", component=kind, tier=tier)] = (
                used / c.pool_capacity)
            want[key("vllm:kv_cache_pool_slots", component=kind, tier=tier,
                     state="free")] = c.pool_available
            want[key("vllm:kv_cache_pool_slots", component=kind, tier=tier,
                     state="used")] = used
            for state in ("evictable", "protected"):
                want[key("vllm:prefix_cache_cached", component=kind, tier=tier,
                         state=state)] = getattr(c, state)
    if s.host is not None:
        want.update(expected_host(s.host))
    return {k: float(v) for k, v in want.items()}


def expected_host(h: Any) -> Scraped:
    """The host tier's series in the vLLM preset, from ``stats().host`` by hand."""
    want = {
        key("vllm:prefix_cache_hits_total", tier="host"): h.host_hit_tokens,
        key("vllm:kv_cache_tier_copy_batches_total", direction="device_to_host"):
            h.backup_batches,
        key("vllm:kv_cache_tier_copy_batches_total", direction="host_to_device"):
            h.load_batches,
        key("vllm:kv_cache_tier_copy_failures_total", direction="device_to_host"):
            h.failed_backups,
        key("vllm:kv_cache_tier_copy_failures_total", direction="host_to_device"):
            h.failed_loads,
        key("vllm:kv_cache_tier_copies_in_flight"): h.copies_in_flight,
        key("vllm:kv_cache_tier_skipped_backups_total"): h.skipped_backups,
        key("vllm:kv_cache_tier_copy_engine_faults_total"): h.copy_faults,
        key("vllm:prefix_cache_load_back_requests_total"): h.load_requests,
    }
    for kind, c in h.components.items():
        want[key("vllm:kv_cache_tier_copied_total", component=kind,
                 direction="device_to_host")] = c.backed_up
        want[key("vllm:kv_cache_tier_copied_total", component=kind,
                 direction="host_to_device")] = c.loaded
    return want


def hybrid() -> PrefixCache:
    return PrefixCache(CacheConfig(capacity=64, page_size=2, components=("full", "swa", "mamba"),
                                   sliding_window=4, mamba_track_interval=2, mamba_states=16,
                                   events=True))


def drive(cache: PrefixCache) -> Any:
    lease = cache.admit(list(range(20)))
    for position in (4, 8, 12, 16):
        cache.checkpoint(lease, position)
    cache.slide_window(lease, 12)  # [0, 8) leave the window
    cache.finish(lease)  # caches [0, 16): states at 4, 8, 12, 16
    cache.match(list(range(18)))  # hits 16
    cache.match(list(range(15)))  # MAMBA: no state at 14, back to 12
    cache.match(list(range(10)))  # SWA: the window [6, 10) touches a tombstone: 0
    cache.match(list(range(4)) + [99] * 6)
    held = cache.admit([*list(range(14)), 50, 51], max_match=8)
    cache.evict(full=4, swa=4, mamba=1)
    return held


def test_every_series_is_there_from_the_start_at_zero_and_equals_stats() -> None:
    cache = hybrid()
    with MetricsExporter(CacheCollector(cache, labels=USER)) as exporter:
        first = scrape(exporter.url)
        want = expected_vllm(cache)
        assert first == want
        zero_counters = {k: v for k, v in first.items() if k[0].endswith("_total")}
        assert len(zero_counters) == 1 + 1 + 5 + 9 + 1 + 3 + 2 + 1
        assert set(zero_counters.values()) == {0.0}


def test_a_scrape_after_traffic_equals_stats() -> None:
    cache = hybrid()
    with MetricsExporter(CacheCollector(cache, labels=USER)) as exporter:
        held = drive(cache)
        seen = scrape(exporter.url)
        assert seen == expected_vllm(cache)
        assert seen[key("vllm:prefix_cache_lost_tokens_total", component="mamba",
                        reason="no_state")] > 0
        assert seen[key("vllm:prefix_cache_active_leases")] == 1
        cache.finish(held)
        assert scrape(exporter.url) == expected_vllm(cache)  # read at scrape time


def test_the_sglang_preset_renames_what_sglang_dashboards_query() -> None:
    cache = PrefixCache(CacheConfig(capacity=32, page_size=1))
    cache.finish(cache.admit([1, 2, 3, 4]))
    cache.match([1, 2, 3, 9])
    with MetricsExporter(CacheCollector(cache, preset_name="sglang", labels=USER)) as exp:
        seen = scrape(exp.url)
    s = cache.stats()
    assert seen[key("sglang:cached_tokens_total", cache_source="device")] == s.hit_tokens == 3
    assert seen[key("sglang:cache_hit_rate")] == s.hit_rate
    assert seen[key("sglang:token_usage", component="full", cache_source="device")] == 4 / 32
    assert seen[key("sglang:prefix_cache_queries_total")] == 8
    assert not [name for name, _ in seen if not name.startswith("sglang:")]


def test_the_publishers_counters_are_in_the_same_scrape() -> None:
    pytest.importorskip("zmq", reason="pyzmq is not installed (events extra)")
    from radixkv.events import KVEventPublisher

    cache = hybrid()
    with KVEventPublisher(endpoint="tcp://127.0.0.1:0", bind=True,
                          replay_endpoint="tcp://127.0.0.1:0", heartbeat_interval=None) as pub, \
            MetricsExporter(CacheCollector(cache, pub, labels=USER)) as exporter:
        drive(cache)
        pub.publish(cache)
        assert pub.flush(10)
        seen = scrape(exporter.url)
        p = pub.stats()
    assert seen[key("vllm:kv_events_batches_total", kind="batch")] == p["batches"] == 2
    assert seen[key("vllm:kv_events_batches_total", kind="heartbeat")] == p["heartbeats"]
    for name, stat in [("send_errors", "send_errors"), ("dropped", "dropped_events"),
                       ("resyncs", "resyncs"), ("replay_lagged", "replay_lagged"),
                       ("replay_missed", "replay_missed")]:
        assert seen[key(f"vllm:kv_events_{name}_total")] == p[stat]
    assert seen[key("vllm:kv_events_replay_requests_total", result="served")] == (
        p["replay_requests"])
    assert seen[key("vllm:kv_events_replay_requests_total", result="malformed")] == (
        p["replay_bad_requests"])
    assert seen[key("vllm:kv_events_pending")] == p["pending"] == 0
    assert seen[key("vllm:kv_events_replay_buffered")] == p["replay_buffered"] == 2


def test_scrapes_while_the_scheduler_thread_drives_the_cache() -> None:
    import random
    import threading

    cache = hybrid()
    rng = random.Random(3)
    done = threading.Event()
    seen: list[Scraped] = []
    with MetricsExporter(CacheCollector(cache, labels=USER)) as exporter:
        def scraper() -> None:
            while not done.is_set() and len(seen) < 5000:
                seen.append(scrape(exporter.url))

        thread = threading.Thread(target=scraper)
        thread.start()
        try:
            for i in range(1500):
                if i % 300 == 0:
                    # The scraper runs freely; at a few checkpoints the driver waits for
                    # one more scrape, so scrapes land mid-run however loaded the machine.
                    before = len(seen)
                    while len(seen) == before and thread.is_alive():
                        done.wait(0.001)
                tokens = [rng.randrange(6) for _ in range(rng.randrange(1, 16))]
                try:
                    cache.finish(cache.admit(tokens))
                except MemoryError:
                    cache.evict(full=16, swa=16, mamba=4)
                cache.match(tokens)
        finally:
            done.set()
            thread.join(30)
        final = scrape(exporter.url)
    assert final == expected_vllm(cache)
    assert len(seen) >= 5
    queries = key("vllm:prefix_cache_queries_total")
    counts = [s[queries] for s in seen] + [final[queries]]
    assert counts == sorted(counts)  # counters never go back
