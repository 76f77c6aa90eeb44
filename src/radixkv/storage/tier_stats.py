"""What ``stats().storage`` reports: the storage tier's reads and writes, and its store's
own counters (calls, pages, bytes, seconds, faults by kind)."""

from __future__ import annotations

from dataclasses import dataclass

from .backend_stats import StorageStats


@dataclass(frozen=True, slots=True)
class StorageTierStats:
    """The L3 tier of a cache. Reads: ``prefetches`` started, ``lookups`` answered by the
    store, ``hit_pages`` it said it holds and that were fetched (all components), and of
    those prefetches: ``misses`` (nothing usable), ``no_room`` (no host room for the
    pages), ``not_attached`` (the tree already held them, or could not take them),
    ``cancelled`` (by a reset or close); ``restores`` that added nodes and the
    ``restored_tokens`` they added; ``prefetches_in_flight`` now. Writes:
    ``queued_pages`` (snapshotted for a put), ``written_pages`` (the store took them),
    ``failed_pages``; ``events_dropped``: STORAGE events discarded by a full event queue
    (the bound is ``CacheConfig.event_queue_limit``, as for the device's events; a cache
    without events queues none). ``backend``: the store's counters (:class:`StorageStats`: bytes,
    seconds per kind of call, faults by kind)."""

    prefetches: int
    lookups: int
    hit_pages: int
    misses: int
    no_room: int
    not_attached: int
    cancelled: int
    restores: int
    restored_tokens: int
    prefetches_in_flight: int
    queued_pages: int
    written_pages: int
    failed_pages: int
    events_dropped: int
    backend: StorageStats

    @property
    def faults(self) -> int:
        """Pages lost to store faults, all kinds."""
        return self.backend.total_faults
