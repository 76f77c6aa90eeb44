"""Metric samples computed from ``PrefixCache.stats()`` and ``KVEventPublisher.stats()``:
pure functions, run at scrape time, so caching costs nothing per cache call.

Every labelled series is listed from the first scrape on, at zero where nothing happened
yet: the label values come from the cache's components and fixed reason lists, never from
what was observed.
"""

from __future__ import annotations

from ..cache.results import CacheStats

Labels = dict[str, str]
Sample = tuple[Labels, float]
Samples = dict[str, list[Sample]]

DEVICE = "device"
"""The only tier so far; host and storage tiers will add their own series."""


def cache_samples(stats: CacheStats) -> Samples:
    """Every cache metric's samples, keyed as in :data:`~radixkv.metrics.names.CACHE_METRICS`."""
    return {
        "queries": [({}, stats.match_tokens)],
        "hits": [({"tier": DEVICE}, stats.hit_tokens)],
        "lost": _lost(stats),
        "evictions": [({"component": kind, "reason": reason}, count)
                      for kind, c in stats.components.items()
                      for reason, count in c.evicted.items()],
        "inserted": [({}, stats.inserted_tokens)],
        "requests": [({"outcome": "admitted"}, stats.admitted),
                     ({"outcome": "finished"}, stats.finished),
                     ({"outcome": "aborted"}, stats.aborted)],
        "checkpoints": [({"use": "created"}, stats.checkpoints_created),
                        ({"use": "used"}, stats.checkpoints_used)],
        "events_dropped": [({}, stats.events_dropped)],
        "hit_rate": [({}, stats.hit_rate)],
        "usage": [({"component": kind, "tier": DEVICE}, _usage(c.pool_capacity,
                                                               c.pool_available))
                  for kind, c in stats.components.items()],
        "pool_slots": [({"component": kind, "tier": DEVICE, "state": state}, value)
                       for kind, c in stats.components.items()
                       for state, value in (("free", c.pool_available),
                                            ("used", c.pool_capacity - c.pool_available))],
        "cached": [({"component": kind, "state": state}, value)
                   for kind, c in stats.components.items()
                   for state, value in (("evictable", c.evictable),
                                        ("protected", c.protected))],
        "held": [({}, stats.held_by_requests)],
        "leases": [({}, stats.active_leases)],
        "nodes": [({}, stats.nodes)],
    }


def _lost(stats: CacheStats) -> list[Sample]:
    lost: list[Sample] = [({"component": kind, "reason": c.lost_reason}, c.lost)
                          for kind, c in stats.components.items()]
    lost.append(({"component": "all", "reason": "max_match"}, stats.capped_tokens))
    lost.append(({"component": "all", "reason": "unseen"}, stats.unseen_tokens))
    return lost


def _usage(capacity: int, available: int) -> float:
    return (capacity - available) / capacity if capacity else 0.0


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
