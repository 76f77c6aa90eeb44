"""The tree's queue of KV events; disabled, each hook costs the caller one ``if``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import BlockRemoved, BlockStored, KVEvent
from .hashing import event_id, page_digests
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

    __slots__ = ("_events", "_tree", "dropped", "dropped_since_take", "enabled", "limit")

    def __init__(self, tree: TreeState, enabled: bool, limit: int) -> None:
        self.enabled = enabled
        self.limit = limit
        self.dropped = 0
        """Events discarded because the queue was full, since the tree was made."""
        self.dropped_since_take = 0
        """Events discarded since the last :meth:`take` (0: the queue is complete)."""
        self._tree = tree
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

    def stored(self, node: Node, medium: str | None = None) -> None:
        """Announce ``node``'s pages as newly held on ``medium`` (default: the device's;
        its parent was announced before)."""
        tree = self._tree
        digests = page_digests(node, tree.page_bytes)
        parent = node.parent
        parent_hash = None
        if parent is not None and parent.parent is not None:
            parent_hash = event_id(page_digests(parent, tree.page_bytes)[-1])
        self.push(
            BlockStored(
                block_hashes=[event_id(d) for d in digests],
                parent_block_hash=parent_hash,
                token_ids=unpack_tokens(node.key, tree.config.bigram),
                block_size=tree.page_size,
                medium=tree.config.medium if medium is None else medium,
                namespace=node.namespace,
            )
        )

    def removed(self, node: Node, medium: str | None = None) -> None:
        """Announce that ``node``'s pages are no longer held, with the ids they were stored
        with."""
        digests = page_digests(node, self._tree.page_bytes)
        self.push(
            BlockRemoved([event_id(d) for d in digests],
                         self._tree.config.medium if medium is None else medium, node.namespace)
        )
