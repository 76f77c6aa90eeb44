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
    """Builds BlockStored/BlockRemoved events from nodes and queues them in order."""

    __slots__ = ("_events", "_tree", "enabled")

    def __init__(self, tree: TreeState, enabled: bool) -> None:
        self.enabled = enabled
        self._tree = tree
        self._events: list[KVEvent] = []

    def push(self, event: KVEvent) -> None:
        self._events.append(event)

    def take(self) -> list[KVEvent]:
        """Return and forget every queued event, oldest first."""
        events, self._events = self._events, []
        return events

    def stored(self, node: Node) -> None:
        """Announce ``node``'s pages as newly held (its parent was announced before)."""
        tree = self._tree
        digests = page_digests(node, tree.page_bytes)
        parent = node.parent
        parent_hash = None
        if parent is not None and parent.parent is not None:
            parent_hash = event_id(page_digests(parent, tree.page_bytes)[-1])
        self._events.append(
            BlockStored(
                block_hashes=[event_id(d) for d in digests],
                parent_block_hash=parent_hash,
                token_ids=unpack_tokens(node.key, tree.config.bigram),
                block_size=tree.page_size,
                medium=tree.config.medium,
                namespace=node.namespace,
            )
        )

    def removed(self, node: Node) -> None:
        """Announce that ``node``'s pages are no longer held, with the ids they were stored
        with."""
        digests = page_digests(node, self._tree.page_bytes)
        self._events.append(
            BlockRemoved([event_id(d) for d in digests], self._tree.config.medium, node.namespace)
        )
