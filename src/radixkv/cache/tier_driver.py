"""The cache's tiers below the device, driven: what a match, an admission and an insert
tell them; poll and wait (how the cache learns that their copies landed); prefetch, the
storage tier's events, close."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.events import KVEvent
from ..core.keys import Namespace
from ..core.node import Node
from ..core.tiers import DEVICE
from ..core.types import TreeMatch
from ..errors import ConfigError
from .arguments import as_bool, request_args
from .lease import Lease
from .results import MatchResult

if TYPE_CHECKING:  # the state imports the parts' modules that build its listener
    from .cache_state import CacheState


class TierDriver:
    """poll / wait: the acknowledgements of the lower tiers' copies; prefetch,
    take_storage_events, close; and what the other parts tell the tiers (:meth:`matched`,
    :meth:`stored`, :meth:`inserted`). Built on the cache's state, whose ``lower`` and
    ``storage`` it reads at each use: ``close`` rebinds them (and a test may add a tier)."""

    def __init__(self, state: CacheState) -> None:
        self.state = state
        self.tree = state.tree
        self._changed = state._changed
        self._check_active = state._check_active
        self._key = state._key

    def poll(self) -> list[Lease]:
        """Apply the copies the engine acknowledged since the last poll: backed-up and
        loaded nodes are unlocked, failed copies give their slots back. Returns the leases
        that became ready, and those that failed (state ``FAILED``: a load-back they needed
        failed; the prefix reads as before the load, host values intact; admit again).
        Without a host tier, returns ``[]``. Cost: O(nodes copied)."""
        for tier in self.state.lower:
            tier.poll()
        for tier in self.state.lower:  # what landed may make copies due (a backup above a node)
            tier.complete_store()
        return self._take_changed()

    def wait(self, lease: Lease | None = None) -> list[Lease]:
        """Block until ``lease`` is ready (or failed), or with no lease until no copy is in
        flight (with a storage tier, every L3 prefetch complete and attached first);
        returns what :meth:`poll` would. Raises :class:`LeaseError` for a lease
        this cache does not hold, :class:`StorageTimeoutError` when the store's I/O does
        not complete within ``StorageTier.wait_timeout_s`` (it stays in flight)."""
        if not self.state.lower:
            return []
        tickets = None
        if lease is not None:
            self._check_active(lease)
            tickets = list(lease.waiting)
        # from the bottom up: what a tier's reads bring up lands on the tier above it
        for tier in reversed(self.state.lower):
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
        packed, space, _priority, _ttl = request_args(tokens, namespace, 0, None)
        storage = self.state.storage
        if storage is None:
            raise ConfigError("prefetch needs a storage tier (CacheConfig.storage)")
        if wait is not False and as_bool("wait", wait):
            return storage.fetch(self._key(packed), space)
        return storage.prefetch(self._key(packed), space) is not None

    def take_storage_events(self) -> list[KVEvent]:
        """Drain the BlockStored events (medium ``STORAGE``) of pages written to L3 since
        the last call (after :meth:`close`, those of the puts it waited for, once);
        ``[]`` without a storage tier. Publish them on the store's own topic
        (:class:`~radixkv.events.StorageEventPublisher`): every engine sharing the store
        sees them."""
        state = self.state
        events, state.closing_events = state.closing_events, []
        for tier in state.lower:
            events += tier.take_events()
        return events

    def close(self) -> None:
        """Finish the storage tier's I/O (queued writes submitted and landed, prefetches in
        flight dropped) and close its store; the cache then runs without L3, as if it had
        no storage tier. Idempotent; a no-op without one. Raises
        :class:`StorageTimeoutError` when that I/O does not end within
        ``StorageTier.wait_timeout_s``: the tier stays open, so close can be called again."""
        state = self.state
        for tier in state.lower:
            if tier.close():
                state.closing_events += tier.take_events()
                state.lower = tuple(other for other in state.lower if other is not tier)
        if state.storage not in state.lower:  # the accessor names an open tier only
            state.storage = None

    def _take_changed(self) -> list[Lease]:
        # the list is the state's (the host tier's CopyAcks appends to it): emptied in place
        changed = list(self._changed)
        self._changed.clear()
        return changed

    # ------------------------------------------------------------------ what the tiers hear

    def matched(self, result: MatchResult, key: bytes, space: Namespace,
                found: TreeMatch) -> None:
        """Fill in what the lower tiers add to a match: ``host_length``, the load-backs
        still writing to the prefix; and note the hit nodes for their write policies
        (O(depth x tiers))."""
        for tier in self.state.lower:
            tier.prepare_store(found.path)
        if found.length < found.branch:
            result.host_length = \
                self.tree.copies.match_all_tiers(key, space).length - found.length
        copying = self.tree.copying
        if copying:
            result.loading = tuple(sorted({
                record.ticket for node in found.path for record in copying.get(node.id, ())
                if record.tier == DEVICE}))

    def lookup(self, key: bytes, space: Namespace) -> None:
        """Before an admission with load-back matches ``key``: each tier, from the host
        down, brings its part of it up (:meth:`LowerTier.lookup`)."""
        for tier in self.state.lower:
            tier.lookup(key, space)

    def inserted(self, node: Node | None) -> None:
        """Let the lower tiers' write policies see the nodes an insert stored or ran
        through (the first use of a new node), and start the copies that are due."""
        if node is None:
            return
        path = []
        while node.parent is not None:
            path.append(node)
            node = node.parent
        self.stored(path)

    def stored(self, path: list[Node]) -> None:
        """Tell every lower tier of ``path``'s uses, then let each start its due copies."""
        lower = self.state.lower
        for tier in lower:
            tier.prepare_store(path)
        for tier in lower:
            tier.complete_store()
