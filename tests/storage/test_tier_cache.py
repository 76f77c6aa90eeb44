"""The storage tier inside a cache, step by step, on a real FileStorage shared by two
caches ("engines"): what is written, what a second engine restores, and the counters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from radixkv import BlockStored, CacheConfig, HostTier, NumpyCopyEngine, PrefixCache, StorageTier
from radixkv.errors import ConfigError
from radixkv.metrics import StatsLogger
from radixkv.storage import STORAGE_MEDIUM, FileStorage, FileStorageConfig

from .tier_support import PAGE, Engine, engine, kv_of, layouts, serve

PROMPT = list(range(100, 164))  # 16 pages


def store(tmp_path: Path) -> FileStorage:
    return FileStorage(FileStorageConfig(root=tmp_path / "l3"))


def closed(made: Engine) -> None:
    made.cache.close()
    made.audited()


def first_engine_wrote(tmp_path: Path) -> None:
    """An engine served PROMPT on the store under ``tmp_path`` (its 16 pages are there)."""
    first = engine(store(tmp_path))
    serve(first, PROMPT)
    closed(first)


@pytest.mark.parametrize("shape", ["full", "full+swa", "full+mamba"])
def test_a_second_engine_restores_what_the_first_wrote(tmp_path: Path, shape: str) -> None:
    first = engine(store(tmp_path), shape, wait_policy="wait_complete")
    assert serve(first, PROMPT) == 0
    written = first.cache.stats().storage
    closed(first)
    second = engine(store(tmp_path), shape, wait_policy="wait_complete")
    lease = second.cache.admit(PROMPT, load_back=True)
    second.audited()
    assert lease.cached_length == 64 and not lease.ready
    second.cache.wait(lease)
    second.audited()
    assert np.array_equal(second.device["full"][lease.slots], kv_of(PROMPT))
    stats = second.cache.stats().storage
    assert stats is not None and written is not None
    assert (stats.prefetches, stats.lookups, stats.restores, stats.restored_tokens) == (1, 1, 1, 64)
    # what each component's hit rule fetched: FULL every page; SWA its last window (8
    # tokens: 2 pages); MAMBA the state at the cut
    assert stats.hit_pages == {"full": 16, "full+swa": 18, "full+mamba": 17}[shape]
    second.cache.finish(lease)
    second.audited()


def test_writes_go_out_when_the_host_backup_lands(tmp_path: Path) -> None:
    first = engine(store(tmp_path))
    serve(first, PROMPT)
    stats = first.cache.stats().storage
    assert stats is not None
    assert stats.queued_pages == 16
    first.cache.poll()  # the put submitted at the last poll has landed by the next one ...
    first.cache.close()  # ... or at close, which waits for it
    assert first.cache.stats().storage is None  # closed: the cache runs without L3
    assert store(tmp_path).exists_prefix(layouts(("full",))[0].token_keys(PROMPT)) == 16


def test_write_back_writes_only_when_host_eviction_drops_the_pages(tmp_path: Path) -> None:
    first = engine(store(tmp_path), write_policy="write_back")
    serve(first, PROMPT)
    first.cache.evict(full=10**6)  # device eviction demotes to the host: no L3 write yet
    first.audited()
    first.cache.poll()
    assert first.cache.stats().storage.queued_pages == 0  # type: ignore[union-attr]
    host = first.cache.host
    assert host is not None
    host.evict_host([10**6])
    first.audited()
    assert first.cache.stats().storage.queued_pages == 16  # type: ignore[union-attr]
    closed(first)
    assert store(tmp_path).exists_prefix(layouts(("full",))[0].token_keys(PROMPT)) == 16


@pytest.mark.parametrize("policy", ["write_through", "write_back"])
def test_after_close_the_host_tiers_sink_queues_nothing_more(tmp_path: Path,
                                                             policy: str) -> None:
    made = engine(store(tmp_path), write_policy=policy)
    serve(made, PROMPT[:16])
    storage, host = made.cache.storage, made.cache.host
    assert storage is not None and host is not None and host.sink is not None
    writes = storage.writes
    closed(made)
    queued = writes.queued_pages
    serve(made, PROMPT)  # write-through: backups land and are told to the sink
    made.cache.evict(full=10**6)  # write-back: device eviction backs up, then demotes
    made.cache.poll()
    assert host.evict_host([10**6])[0] > 0  # write-back: the drops are told to the sink
    made.audited()
    assert writes.queued_pages == queued and writes.outbox == [[]] and writes.puts == []


def test_storage_events_announce_pages_once_stored(tmp_path: Path) -> None:
    first = engine(store(tmp_path), events=True)
    serve(first, PROMPT[:32])
    assert first.cache.take_storage_events() == []  # submitted, not yet landed
    first.cache.storage.settle()  # type: ignore[union-attr]
    (event,) = first.cache.take_storage_events()
    assert isinstance(event, BlockStored)
    assert event.medium == STORAGE_MEDIUM and len(event.block_hashes) == 8
    assert event.token_ids == PROMPT[:32] and event.parent_block_hash is None
    closed(first)


def test_a_remainder_below_the_threshold_asks_nothing(tmp_path: Path) -> None:
    first_engine_wrote(tmp_path)
    second = engine(store(tmp_path), prefetch_threshold=72)
    assert serve(second, PROMPT) == 0
    stats = second.cache.stats().storage
    assert stats is not None and stats.prefetches == 0 and stats.backend.exists_calls == 0
    closed(second)


def test_best_effort_admits_now_and_a_later_request_hits(tmp_path: Path) -> None:
    first_engine_wrote(tmp_path)
    second = engine(store(tmp_path), wait_policy="best_effort")
    assert second.cache.prefetch(PROMPT) is True
    second.audited()
    second.cache.wait()  # no lease: until no copy (L3 reads included) is in flight
    second.audited()
    assert second.cache.stats().storage.restored_tokens == 64  # type: ignore[union-attr]
    assert serve(second, PROMPT) == 64
    closed(second)


def test_an_empty_store_is_a_miss_and_pins_nothing(tmp_path: Path) -> None:
    made = engine(store(tmp_path), wait_policy="wait_complete")
    assert serve(made, PROMPT) == 0
    stats = made.cache.stats().storage
    assert stats is not None and (stats.prefetches, stats.misses, stats.restores) == (1, 1, 0)
    assert made.cache.stats().held_by_requests == 0
    closed(made)


def test_no_host_room_drops_the_prefetch(tmp_path: Path) -> None:
    first_engine_wrote(tmp_path)
    second = engine(store(tmp_path), host_capacity=32, wait_policy="wait_complete")
    assert serve(second, PROMPT) == 0
    stats = second.cache.stats().storage
    assert stats is not None and stats.no_room == 1 and stats.restores == 0
    closed(second)


def test_a_reset_cancels_prefetches_in_flight(tmp_path: Path) -> None:
    first_engine_wrote(tmp_path)
    second = engine(store(tmp_path))
    assert second.cache.prefetch(PROMPT)
    second.cache.reset()
    second.audited()
    stats = second.cache.stats().storage
    assert stats is not None and stats.prefetches_in_flight == 0 and stats.restores == 0
    assert serve(second, PROMPT) == 0  # best effort: the new prefetch has not arrived
    closed(second)


def test_storage_needs_a_host_tier_a_backend_and_host_buffers(tmp_path: Path) -> None:
    tier = StorageTier(layouts=layouts(("full",)))
    with pytest.raises(ConfigError, match="needs a host tier"):
        CacheConfig(capacity=64, page_size=PAGE, storage=tier)
    config = CacheConfig(capacity=64, page_size=PAGE, host=HostTier(capacity=64), storage=tier)
    with pytest.raises(ConfigError, match="storage backend"):
        PrefixCache(config, NumpyCopyEngine())
    with pytest.raises(ConfigError, match="no host buffer"):
        PrefixCache(config, NumpyCopyEngine(), storage=store(tmp_path))


def test_layouts_must_fit_the_cache() -> None:
    with pytest.raises(ConfigError, match="page_size=4"):
        CacheConfig(capacity=64, page_size=8, host=HostTier(capacity=64),
                    storage=StorageTier(layouts=layouts(("full",))))
    with pytest.raises(ConfigError, match="missing"):
        CacheConfig(capacity=64, page_size=PAGE, components=("full", "swa"), sliding_window=8,
                    host=HostTier(capacity=64), storage=StorageTier(layouts=layouts(("full",))))
    with pytest.raises(ConfigError, match="wait policy"):
        StorageTier(layouts=layouts(("full",)), wait_policy="eventually")


def test_a_tenant_never_reads_another_tenants_pages(tmp_path: Path) -> None:
    first = engine(store(tmp_path), wait_policy="wait_complete")
    lease = first.cache.admit(PROMPT, ("tenant-a", None), load_back=True)
    first.cache.finish(lease)
    first.cache.poll()
    closed(first)
    second = engine(store(tmp_path), wait_policy="wait_complete")
    other = second.cache.admit(PROMPT, ("tenant-b", None), load_back=True)
    second.audited()
    assert other.cached_length == 0
    second.cache.abort(other)
    same = second.cache.admit(PROMPT, ("tenant-a", None), load_back=True)
    second.audited()
    assert same.cached_length == 64
    second.cache.wait(same)
    second.cache.finish(same)
    stats = second.cache.stats().storage
    assert stats is not None and (stats.misses, stats.restores) == (1, 1)
    closed(second)


def test_the_stats_line_reports_what_l3_restored_and_wrote(tmp_path: Path) -> None:
    first_engine_wrote(tmp_path)
    second = engine(store(tmp_path), wait_policy="wait_complete")
    logger = StatsLogger(second.cache, every=1)
    assert serve(second, [*PROMPT, 7, 7, 7, 7]) == 64
    second.cache.storage.settle()  # type: ignore[union-attr]
    line = logger.step()
    assert line is not None and line.endswith("; L3: restored 64 tokens, wrote 1 pages, 0 faults")
    closed(second)


def test_restored_pages_are_announced_on_the_restoring_engines_storage_stream(
        tmp_path: Path) -> None:
    """So that what it writes below them chains to pages its own stream named."""
    first_engine_wrote(tmp_path)
    second = engine(store(tmp_path), events=True, wait_policy="wait_complete")
    assert serve(second, [*PROMPT, *range(500, 508)]) == 64  # restores 16 pages, adds 2
    second.cache.storage.settle()  # type: ignore[union-attr]
    restored, written = second.cache.take_storage_events()
    assert isinstance(restored, BlockStored) and isinstance(written, BlockStored)
    assert restored.token_ids == PROMPT and restored.parent_block_hash is None
    assert written.token_ids == list(range(500, 508))
    assert written.parent_block_hash == restored.block_hashes[-1]
    closed(second)
