"""The tree's queue of KV events; disabled, each hook costs the caller one ``if``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import BlockRemoved, KVEvent, block_stored
from .hashing import page_digests, page_hash
from .keys import unpack_tokens
from .node import Node

if TYPE_CHECKING:
    from .state import TreeState


class EventLog:
    """Builds BlockStored/BlockRemoved events from nodes and queues them in order.

    The queue holds at most ``limit`` events. The event that would exceed it discards the
    whole queue (a stream with a hole in it misleads a router more than an empty one) and
    every later event is discarded too until the next :meth:`take`; all of them are counted
    in :attr:`dropped`, and :attr:`dropped_since_take` tells the consumer (the publisher) to
    resynchronise its routers from a snapshot of the tree instead.
    """

    __slots__ = ("_bigram", "_events", "_medium", "_tree", "dropped", "dropped_since_take",
                 "enabled", "hasher", "limit")

    def __init__(self, tree: TreeState, enabled: bool, limit: int) -> None:
        self.enabled = enabled
        self.limit = limit
        self.dropped = 0
        """Events discarded because the queue was full, since the tree was made."""
        self.dropped_since_take = 0
        """Events discarded since the last :meth:`take` (0: the queue is complete)."""
        self._tree = tree
        self._events: list[KVEvent] = []
        self._bigram, self._medium = tree.config.bigram, tree.config.medium
        self.hasher = page_hash(tree.config.page_hash)
        """The tree's page hash (its name is part of what identifies a storage key)."""

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

    def stored(self, node: Node, medium: str | None = None) -> None:
        """Announce ``node``'s pages as newly held on ``medium`` (default: the device's;
        its parent was announced before). Cost: one page hash per page not hashed yet (see
        :mod:`~radixkv.core.hashing`), the ids and tokens in a few C calls."""
        tree, hasher = self._tree, self.hasher
        digests = node.hashes
        if digests is None:
            digests = page_digests(node, tree.page_bytes, hasher)
        parent = node.parent
        assert parent is not None, "a root is never announced"
        head = None
        if parent.parent is not None:  # hashed along with the node's own digests
            head = (parent.hashes or page_digests(parent, tree.page_bytes, hasher))[-1]
        parent_hash, ids = hasher.ids(digests, head)  # the parent's id too, in one call
        tokens = unpack_tokens(node.key, self._bigram)
        event = block_stored(ids, parent_hash, tokens, tree.page_size,
                             self._medium if medium is None else medium, node.namespace)
        if self.dropped_since_take or len(self._events) >= self.limit:
            self.push(event)
        else:  # events: push()'s common case inline
            self._events.append(event)

    def removed(self, node: Node, medium: str | None = None) -> None:
        """Announce that ``node``'s pages are no longer held, with the ids they were stored
        with."""
        hasher = self.hasher
        digests = page_digests(node, self._tree.page_bytes, hasher)
        self.push(BlockRemoved(hasher.ids(digests)[1],
                               self._tree.config.medium if medium is None else medium,
                               node.namespace))
