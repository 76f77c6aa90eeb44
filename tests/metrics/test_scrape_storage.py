"""The real scrape of caches with a storage tier (two engines on one FileStorage): the L3
series are there from the start at zero, and after writes, a restore, a miss, a corrupt page
and a cancelled prefetch every scraped value equals ``stats().storage`` (both presets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("prometheus_client", reason="prometheus-client is not installed "
                    "(pip install -e '.[metrics]')")

from radixkv.metrics import CacheCollector, MetricsExporter
from radixkv.storage import FileStorage, FileStorageConfig
from radixkv.storage.backend_stats import FAULTS

from ..storage.tier_support import Engine, engine, layouts, serve
from .test_scrape import USER, Scraped, expected_vllm, key, scrape

PROMPT = list(range(100, 164))  # 16 pages
OUTCOMES = {"restored": "restores", "miss": "misses", "no_room": "no_room",
            "not_attached": "not_attached", "cancelled": "cancelled"}


def store(tmp_path: Path) -> FileStorage:
    return FileStorage(FileStorageConfig(root=tmp_path / "l3"))


def expected_storage(made: Engine, prefix: str = "vllm:") -> Scraped:
    """The storage tier's series, written out from ``stats().storage`` by hand."""
    s = made.cache.stats().storage
    assert s is not None
    b = s.backend
    want: dict[tuple[str, Any], float] = {
        key(f"{prefix}kv_storage_prefetches_total"): s.prefetches,
        key(f"{prefix}kv_storage_prefetches_in_flight"): s.prefetches_in_flight,
        key(f"{prefix}kv_storage_lookups_total"): s.lookups,
        key(f"{prefix}kv_storage_hit_pages_total"): s.hit_pages,
        key(f"{prefix}kv_storage_restored_tokens_total"): s.restored_tokens,
        key(f"{prefix}kv_storage_write_pages_total", result="queued"): s.queued_pages,
        key(f"{prefix}kv_storage_write_pages_total", result="written"): s.written_pages,
        key(f"{prefix}kv_storage_write_pages_total", result="failed"): s.failed_pages,
        key(f"{prefix}kv_storage_bytes_total", direction="read"): b.read_bytes,
        key(f"{prefix}kv_storage_bytes_total", direction="written"): b.written_bytes,
        key(f"{prefix}kv_storage_seconds_total", call="exists"): b.exists_seconds,
        key(f"{prefix}kv_storage_seconds_total", call="get"): b.read_seconds,
        key(f"{prefix}kv_storage_seconds_total", call="put"): b.write_seconds,
    }
    for outcome, field in OUTCOMES.items():
        want[key(f"{prefix}kv_storage_prefetch_outcomes_total", outcome=outcome)] = getattr(
            s, field)
    for kind in FAULTS:
        want[key(f"{prefix}kv_storage_faults_total", kind=kind)] = b.faults[kind]
    return {k: float(v) for k, v in want.items()}


def split(seen: Scraped) -> tuple[Scraped, Scraped]:
    """The L3 series, and the rest."""
    ours = {k: v for k, v in seen.items() if ":kv_storage_" in k[0]}
    return ours, {k: v for k, v in seen.items() if k not in ours}


def test_the_storage_series_are_there_from_the_start_at_zero(tmp_path: Path) -> None:
    made = engine(store(tmp_path))
    with MetricsExporter(CacheCollector(made.cache, labels=USER)) as exporter:
        ours, rest = split(scrape(exporter.url))
    assert ours == expected_storage(made) and rest == expected_vllm(made.cache)
    assert len(ours) == 1 + 5 + 1 + 1 + 1 + 1 + 3 + 2 + 3 + len(FAULTS)
    assert set(ours.values()) == {0.0}
    made.cache.close()


def test_a_scrape_after_writes_restores_and_faults_equals_stats(tmp_path: Path) -> None:
    first = engine(store(tmp_path))
    serve(first, PROMPT)
    serve(first, [*PROMPT[:32], *range(900, 932)])
    first.cache.close()  # the puts land
    l3 = store(tmp_path)
    (victim,) = (tmp_path / "l3").rglob(layouts(("full",))[0].token_keys(PROMPT)[4])
    second = engine(l3, wait_policy="wait_complete")
    with MetricsExporter(CacheCollector(second.cache, labels=USER)) as exporter:
        assert serve(second, PROMPT) == 64  # restored from L3
        victim.write_bytes(victim.read_bytes()[:-3])  # page 4 torn: read as corrupt
        serve(second, [*range(900, 964)])  # nothing of it in L3: a miss
        second.cache.evict(full=10**6)
        second.cache.host.evict_host([10**6])  # type: ignore[union-attr]
        assert serve(second, [*PROMPT[:32], *range(900, 932)]) == 16  # pages 0-3
        assert second.cache.prefetch(list(range(2000, 2064))) is True
        second.cache.reset()  # cancels the prefetch in flight
        seen = scrape(exporter.url)
    ours, rest = split(seen)
    assert ours == expected_storage(second) and rest == expected_vllm(second.cache)
    s = second.cache.stats().storage
    assert s is not None
    assert (s.prefetches, s.restores, s.misses, s.cancelled) == (4, 2, 1, 1)
    assert seen[key("vllm:kv_storage_restored_tokens_total")] == s.restored_tokens >= 64
    assert seen[key("vllm:kv_storage_bytes_total", direction="read")] > 0
    assert seen[key("vllm:kv_storage_faults_total", kind="corrupt")] == 1
    second.cache.close()


def test_the_sglang_preset_names_the_same_numbers(tmp_path: Path) -> None:
    first = engine(store(tmp_path))
    serve(first, PROMPT)
    first.cache.close()
    second = engine(store(tmp_path), wait_policy="wait_complete")
    serve(second, PROMPT)
    with MetricsExporter(CacheCollector(second.cache, preset_name="sglang",
                                        labels=USER)) as exporter:
        ours, _ = split(scrape(exporter.url))
    assert ours == expected_storage(second, "sglang:")
    assert ours[key("sglang:kv_storage_restored_tokens_total")] == 64
    second.cache.close()
