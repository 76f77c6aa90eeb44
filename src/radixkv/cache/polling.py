"""poll and wait: how a cache with lower tiers learns that their copies landed; close."""

from __future__ import annotations

from typing import Any

from ..core.events import KVEvent
from ..errors import ConfigError
from .arguments import as_bool
from .lease import Lease
from .lifecycle import Lifecycle


class Polling(Lifecycle):
    """poll / wait: the acknowledgements of the lower tiers' copies; close."""

    def poll(self) -> list[Lease]:
        """Apply the copies the engine acknowledged since the last poll: backed-up and
        loaded nodes are unlocked, failed copies give their slots back. Returns the leases
        that became ready, and those that failed (state ``FAILED``: a load-back they needed
        failed; the prefix reads as before the load, host values intact; admit again).
        Without a host tier, returns ``[]``. Cost: O(nodes copied)."""
        for tier in self.lower:
            tier.poll()
        for tier in self.lower:  # what landed may make copies due (a backup above a node)
            tier.complete_store()
        return self._take_changed()

    def wait(self, lease: Lease | None = None) -> list[Lease]:
        """Block until ``lease`` is ready (or failed), or with no lease until no copy is in
        flight (with a storage tier, every L3 prefetch complete and attached first);
        returns what :meth:`poll` would. Raises :class:`LeaseError` for a lease
        this cache does not hold, :class:`StorageTimeoutError` when the store's I/O does
        not complete within ``StorageTier.wait_timeout_s`` (it stays in flight)."""
        if not self.lower:
            return []
        tickets = None
        if lease is not None:
            self._check_active(lease)
            tickets = list(lease.waiting)
        # from the bottom up: what a tier's reads bring up lands on the tier above it
        for tier in reversed(self.lower):
            tier.complete_load(tickets)
        return self._take_changed()

    def prefetch(self, tokens: Any, namespace: Any = None, *, wait: bool = False) -> bool:
        """Start fetching from L3 what it holds of ``tokens`` beyond the prefix device and
        host serve (when that is at least ``StorageTier.prefetch_threshold`` tokens), so
        that ``admit(tokens, load_back=True)`` later finds it on the host: call it when a
        request arrives, admit it when it is scheduled. Never blocks; pins the served prefix
        until the fetch is taken. With ``wait``, waits for the fetch as ``admit`` does
        (``StorageTier.wait_policy``) and attaches what arrived as host-only nodes
        (:meth:`match` then counts them in ``host_length``): for an engine that allocates
        device memory itself and loads a prefix back before it admits the rest. Returns
        whether a fetch for this prompt is (still) in flight.
        Raises :class:`InvalidTokensError` / :class:`InvalidNamespaceError`, and
        :class:`ConfigError` on a cache without a storage tier."""
        packed, space, _priority, _ttl = self._request(tokens, namespace, 0, None)
        if self.storage is None:
            raise ConfigError("prefetch needs a storage tier (CacheConfig.storage)")
        if wait is not False and as_bool("wait", wait):
            return self.storage.fetch(self._key(packed), space)
        return self.storage.prefetch(self._key(packed), space) is not None

    def take_storage_events(self) -> list[KVEvent]:
        """Drain the BlockStored events (medium ``STORAGE``) of pages written to L3 since
        the last call (after :meth:`close`, those of the puts it waited for, once);
        ``[]`` without a storage tier. Publish them on the store's own topic
        (:class:`~radixkv.events.StorageEventPublisher`): every engine sharing the store
        sees them."""
        events, self.closing_events = self.closing_events, []
        for tier in self.lower:
            events += tier.take_events()
        return events

    def close(self) -> None:
        """Finish the storage tier's I/O (queued writes submitted and landed, prefetches in
        flight dropped) and close its store; the cache then runs without L3, as if it had
        no storage tier. Idempotent; a no-op without one. Raises
        :class:`StorageTimeoutError` when that I/O does not end within
        ``StorageTier.wait_timeout_s``: the tier stays open, so close can be called again."""
        for tier in self.lower:
            if tier.close():
                self.closing_events += tier.take_events()
                self.lower = tuple(other for other in self.lower if other is not tier)
        if self.storage not in self.lower:  # the accessor names an open tier only
            self.storage = None

    def _take_changed(self) -> list[Lease]:
        changed, self._changed = self._changed, []
        return changed
