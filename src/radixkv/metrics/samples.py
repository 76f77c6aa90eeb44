"""Metric samples computed from ``PrefixCache.stats()`` and ``KVEventPublisher.stats()``:
pure functions, run at scrape time, so caching costs nothing per cache call.

Every labelled series is listed from the first scrape on, at zero where nothing happened
yet: the label values come from the cache's components, its tiers and fixed reason lists,
never from what was observed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..cache.results import CacheStats

if TYPE_CHECKING:
    from ..core.tiers import LedgerStats as _Ledger
    from ..host.host_stats import HostStats
    from ..storage.tier_stats import StorageTierStats

Labels = dict[str, str]
Sample = tuple[Labels, float]
Samples = dict[str, list[Sample]]

DEVICE, HOST = "device", "host"
"""The ``tier`` label values (the host tier's series exist only with a host tier)."""

TO_HOST, TO_DEVICE = "device_to_host", "host_to_device"
"""The ``direction`` label values of the host tier's copy metrics."""


def cache_samples(stats: CacheStats) -> Samples:
    """Every cache metric's samples, keyed as in :data:`~radixkv.metrics.names.CACHE_METRICS`;
    with a host tier (``stats.host``), the per-tier metrics carry ``tier="host"`` series too
    and ``hits{tier="device"}`` excludes the tokens loaded back from the host."""
    host = stats.host
    host_hits = 0 if host is None else host.host_hit_tokens
    hits: list[Sample] = [({"tier": DEVICE}, stats.hit_tokens - host_hits)]
    if host is not None:
        hits.append(({"tier": HOST}, host_hits))
    return {
        "queries": [({}, stats.match_tokens)],
        "hits": hits,
        "lost": _lost(stats),
        "evictions": _per_tier(stats, lambda c: list(c.evicted.items()), "reason"),
        "inserted": [({}, stats.inserted_tokens)],
        "requests": [({"outcome": "admitted"}, stats.admitted),
                     ({"outcome": "finished"}, stats.finished),
                     ({"outcome": "aborted"}, stats.aborted)],
        "checkpoints": [({"use": "created"}, stats.checkpoints_created),
                        ({"use": "used"}, stats.checkpoints_used)],
        "events_dropped": [({}, stats.events_dropped)],
        "hit_rate": [({}, stats.hit_rate)],
        "usage": [(labels, _usage(c.pool_capacity, c.pool_available))
                  for labels, c in _tiers(stats)],
        "pool_slots": _per_tier(stats, lambda c: [
            ("free", c.pool_available), ("used", c.pool_capacity - c.pool_available)], "state"),
        "cached": _per_tier(stats, lambda c: [
            ("evictable", c.evictable), ("protected", c.protected)], "state"),
        "held": [({}, stats.held_by_requests)],
        "leases": [({}, stats.active_leases)],
        "nodes": [({}, stats.nodes)],
    }


def _tiers(stats: CacheStats) -> list[tuple[Labels, _Ledger]]:
    """Each (component, tier) ledger with its labels: the device's, then the host's."""
    out: list[tuple[Labels, _Ledger]] = [
        ({"component": kind, "tier": DEVICE}, c) for kind, c in stats.components.items()]
    if stats.host is not None:
        out.extend(({"component": kind, "tier": HOST}, c)
                   for kind, c in stats.host.components.items())
    return out


def _per_tier(stats: CacheStats, values: Callable[[_Ledger], list[tuple[str, int]]],
              label: str) -> list[Sample]:
    return [({**labels, label: name}, value) for labels, c in _tiers(stats)
            for name, value in values(c)]


def _lost(stats: CacheStats) -> list[Sample]:
    lost: list[Sample] = [({"component": kind, "reason": c.lost_reason}, c.lost)
                          for kind, c in stats.components.items()]
    lost.append(({"component": "all", "reason": "max_match"}, stats.capped_tokens))
    lost.append(({"component": "all", "reason": "unseen"}, stats.unseen_tokens))
    return lost


def _usage(capacity: int, available: int) -> float:
    return (capacity - available) / capacity if capacity else 0.0


def host_samples(host: HostStats) -> Samples:
    """The host tier's own metrics (:data:`~radixkv.metrics.names.HOST_METRICS`), from
    ``stats().host``."""
    return {
        "tier_copied": [({"component": kind, "direction": direction}, value)
                        for kind, c in host.components.items()
                        for direction, value in ((TO_HOST, c.backed_up), (TO_DEVICE, c.loaded))],
        "tier_batches": [({"direction": TO_HOST}, host.backup_batches),
                         ({"direction": TO_DEVICE}, host.load_batches)],
        "tier_failures": [({"direction": TO_HOST}, host.failed_backups),
                          ({"direction": TO_DEVICE}, host.failed_loads)],
        "tier_in_flight": [({}, host.copies_in_flight)],
        "tier_skipped": [({}, host.skipped_backups)],
        "tier_faults": [({}, host.copy_faults)],
        "load_requests": [({}, host.load_requests)],
    }


def storage_samples(storage: StorageTierStats) -> Samples:
    """The storage tier's metrics (:data:`~radixkv.metrics.names.STORAGE_METRICS`), from
    ``stats().storage``; faults by every kind the backend counts."""
    backend = storage.backend
    return {
        "storage_prefetches": [({}, storage.prefetches)],
        "storage_prefetch_outcomes": [
            ({"outcome": outcome}, value) for outcome, value in (
                ("restored", storage.restores), ("miss", storage.misses),
                ("no_room", storage.no_room), ("not_attached", storage.not_attached),
                ("cancelled", storage.cancelled))],
        "storage_prefetches_in_flight": [({}, storage.prefetches_in_flight)],
        "storage_lookups": [({}, storage.lookups)],
        "storage_hit_pages": [({}, storage.hit_pages)],
        "storage_restored_tokens": [({}, storage.restored_tokens)],
        "storage_write_pages": [({"result": "queued"}, storage.queued_pages),
                                ({"result": "written"}, storage.written_pages),
                                ({"result": "failed"}, storage.failed_pages)],
        "storage_bytes": [({"direction": "read"}, backend.read_bytes),
                          ({"direction": "written"}, backend.written_bytes)],
        "storage_seconds": [({"call": "exists"}, backend.exists_seconds),
                            ({"call": "get"}, backend.read_seconds),
                            ({"call": "put"}, backend.write_seconds)],
        "storage_faults": [({"kind": kind}, pages) for kind, pages in backend.faults.items()],
    }


def publisher_samples(stats: dict[str, int]) -> Samples:
    """The KV event publisher's samples, from ``KVEventPublisher.stats()``."""
    return {
        "kv_batches": [({"kind": "batch"}, stats["batches"]),
                       ({"kind": "heartbeat"}, stats["heartbeats"])],
        "kv_send_errors": [({}, stats["send_errors"])],
        "kv_dropped": [({}, stats["dropped_events"])],
        "kv_resyncs": [({}, stats["resyncs"])],
        "kv_replay_requests": [({"result": "served"}, stats["replay_requests"]),
                               ({"result": "malformed"}, stats["replay_bad_requests"])],
        "kv_replay_lagged": [({}, stats["replay_lagged"])],
        "kv_replay_missed": [({}, stats["replay_missed"])],
        "kv_pending": [({}, stats["pending"])],
        "kv_replay_buffered": [({}, stats["replay_buffered"])],
    }
