"""The tree's queue of KV events; disabled, each hook costs the caller one ``if``."""

from __future__ import annotations

from hashlib import sha256
from typing import TYPE_CHECKING

from .events import KEEP, MARK, PENDING, BlockRemoved, BlockStored, KVEvent, block_stored
from .hashing import SHA256, namespace_seed, page_digests, page_hash
from .keys import unpack_tokens
from .node import Node

if TYPE_CHECKING:
    from .state import TreeState

_new = object.__new__


class EventQueue:
    """KV events until taken, oldest first: at most ``limit`` of them.

    The event that would exceed the limit discards the whole queue (a stream with a hole in
    it misleads a router more than an empty one) and every later event is discarded too
    until the next :meth:`take`; all of them are counted in :attr:`dropped`, and
    :attr:`dropped_since_take` tells the consumer (a publisher) to resynchronise its routers
    from a snapshot instead. ``enabled``: whether anyone takes the events; a producer pushes
    only while it is (disabled, each hook costs the producer one ``if``, and nothing is kept
    or counted). The tree's device events and a storage tier's STORAGE events each have one.
    """

    __slots__ = ("_events", "dropped", "dropped_since_take", "enabled", "limit")

    def __init__(self, limit: int, enabled: bool = True) -> None:
        self.enabled = enabled
        self.limit = limit
        self.dropped = 0
        """Events discarded because the queue was full, since it was made."""
        self.dropped_since_take = 0
        """Events discarded since the last :meth:`take` (0: the queue is complete)."""
        self._events: list[KVEvent] = []

    def push(self, event: KVEvent) -> None:
        """Queue ``event``, or discard it (see the class) when the queue is full. O(1)."""
        if self.dropped_since_take:
            self.dropped += 1
            self.dropped_since_take += 1
        elif len(self._events) >= self.limit:
            count = len(self._events) + 1
            self.dropped += count
            self.dropped_since_take = count
            self._events = []
        else:
            self._events.append(event)

    def take(self) -> list[KVEvent]:
        """Return and forget every queued event, oldest first; resets :attr:`dropped_since_take`."""
        events, self._events = self._events, []
        self.dropped_since_take = 0
        return events


class EventLog(EventQueue):
    """The tree's queue of device events: builds BlockStored/BlockRemoved events from nodes
    and queues them (see :class:`EventQueue`)."""

    __slots__ = ("_bigram", "_chain", "_context", "_digest", "_ids", "_medium", "_page_bytes",
                 "_page_size", "_plain", "_sha256", "_tree", "hasher")

    def __init__(self, tree: TreeState, enabled: bool, limit: int) -> None:
        super().__init__(limit, enabled)
        self._tree = tree
        self._bigram, self._medium = tree.config.bigram, tree.config.medium
        self.hasher = page_hash(tree.config.page_hash)
        """The tree's page hash (its name is part of what identifies a storage key)."""
        hasher = self.hasher
        self._digest, self._chain, self._ids = hasher.digest, hasher.chain, hasher.ids
        self._page_bytes, self._page_size = tree.page_bytes, tree.page_size
        self._plain = not self._bigram
        """Whether keys are plain u32 tokens, which a pending event keeps packed."""
        self._sha256 = hasher is SHA256
        self._context = (hasher, self._page_size, self._medium)
        """What every pending event of this tree shares (see ``core.events.PendingStored``)."""

    def stored(self, node: Node, medium: str | None = None) -> None:
        """Announce ``node``'s pages as newly held on ``medium`` (default: the device's;
        its parent was announced before). Cost: one page hash per page not hashed yet (see
        :mod:`~radixkv.core.hashing`) and a pending event, O(1) (its ids and tokens are
        computed when first read, see :mod:`~radixkv.core.events`)."""
        # bench events: a new node under a hashed parent or a root (the common case) is
        # hashed here, without page_digests' walk, and its event is pending (ids and tokens
        # computed at first read): page 16 new pass, events on adds 150 instructions a step
        # to admit + finish + take_events, was 346 (xxh3_128)
        parent = node.parent
        assert parent is not None, "a root is never announced"
        digests, above = node.hashes, parent.hashes
        if digests is None and (above is not None or parent.parent is None):
            key = node.key
            previous = self._seed(node.namespace) if above is None else above[-1]
            if len(key) != self._page_bytes:
                node.hashes = digests = self._chain(previous, key, self._page_bytes)
            elif self._sha256:  # hashlib's two C calls inline, no Python call
                node.hashes = digests = [sha256(previous + key).digest()]
            else:
                node.hashes = digests = [self._digest(previous + key)]
        elif digests is None or (above is None and parent.parent is not None):
            digests = page_digests(node, self._page_bytes, self.hasher)
            above = parent.hashes
        if self._plain:  # pending_stored() inline: ids and tokens computed when first read
            event = _new(BlockStored)
            MARK(event, PENDING)
            KEEP(event, (self._context, digests, above, node.key, medium, node.namespace))
        else:
            parent_id, ids = self._ids(digests, None if above is None else above[-1])
            event = block_stored(ids, parent_id, unpack_tokens(node.key, self._bigram),
                                 self._page_size, self._medium if medium is None else medium,
                                 node.namespace)
        if self.dropped_since_take or len(self._events) >= self.limit:
            self.push(event)
        else:  # events: push()'s common case inline
            self._events.append(event)

    def _seed(self, namespace: tuple[object, object]) -> bytes:
        return namespace_seed(namespace, self.hasher)

    def removed(self, node: Node, medium: str | None = None) -> None:
        """Announce that ``node``'s pages are no longer held, with the ids they were stored
        with."""
        hasher = self.hasher
        digests = page_digests(node, self._tree.page_bytes, hasher)
        self.push(BlockRemoved(hasher.ids(digests)[1],
                               self._tree.config.medium if medium is None else medium,
                               node.namespace))
