"""Eviction policies and the candidate queue each component keeps.

A policy is a sort key over a node's bookkeeping: the candidate with the smallest key is
evicted first. Every key ends with the node id, so keys are unique and the order is total.
Recency is measured in logical ticks: the tree advances its clock once per operation that
accesses nodes (match, insert), so orders are deterministic. Definitions used by every policy:

- an *access* of a node: a match whose usable prefix covers (part of) the node, or an insert
  whose key runs through it; it sets ``last_access`` to the current tick;
- a *hit*: a match whose usable prefix covers (part of) the node; it adds 1 to ``hits``
  (inserts are accesses but not hits);
- ``created``: the tick of the insert that created the node (a split half keeps its origin's);
- ``priority``: the highest priority of any request that inserted through the node;
- ``expiry``: ``last_access + ttl`` where ``ttl`` is set by the request that created the node.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from typing import ClassVar

from ..errors import ConfigError
from .node import Node

SortKey = tuple[int, ...]


class EvictionPolicy(ABC):
    """Orders eviction candidates; pure, O(1) per key."""

    name: ClassVar[str]
    monotone: ClassVar[bool] = True
    """Keys only grow as a node is accessed: the queue then re-keys lazily, at pop time."""

    @abstractmethod
    def key(self, node: Node) -> SortKey:
        """Sort key of ``node``: smaller is evicted first; the last element is ``node.id``."""


class LRU(EvictionPolicy):
    """Least recently used first: key ``(last_access, id)``; ties go to the older node."""

    name = "lru"

    def key(self, node: Node) -> SortKey:
        return (node.last_access, node.id)


class MRU(EvictionPolicy):
    """Most recently used first: key ``(-last_access, -id, id)``; ties go to the newer node."""

    name = "mru"
    monotone = False

    def key(self, node: Node) -> SortKey:
        return (-node.last_access, -node.id, node.id)


class FIFO(EvictionPolicy):
    """First inserted first: key ``(created, id)``; accesses and hits do not matter."""

    name = "fifo"

    def key(self, node: Node) -> SortKey:
        return (node.created, node.id)


class FILO(EvictionPolicy):
    """Last inserted first: key ``(-created, -id, id)``; accesses and hits do not matter."""

    name = "filo"

    def key(self, node: Node) -> SortKey:
        return (-node.created, -node.id, node.id)


class LFU(EvictionPolicy):
    """Fewest hits first, ties least recently used: key ``(hits, last_access, id)``."""

    name = "lfu"

    def key(self, node: Node) -> SortKey:
        return (node.hits, node.last_access, node.id)


class Priority(EvictionPolicy):
    """Lowest request priority first, ties least recently used: ``(priority, last_access, id)``."""

    name = "priority"

    def key(self, node: Node) -> SortKey:
        return (node.priority, node.last_access, node.id)


class SLRU(EvictionPolicy):
    """Segmented LRU: probationary nodes (fewer than 2 hits) go before protected ones (2 or
    more), each segment least recently used first: key ``(hits >= 2, last_access, id)``."""

    name = "slru"
    protect_after_hits: ClassVar[int] = 2

    def key(self, node: Node) -> SortKey:
        return (int(node.hits >= self.protect_after_hits), node.last_access, node.id)


class TLRU(EvictionPolicy):
    """Time-aware LRU: earliest expiry first, key ``(last_access + ttl, id)``; a request
    given a long ``ttl`` (a system prompt) outlives more recent short-lived entries."""

    name = "tlru"

    def key(self, node: Node) -> SortKey:
        return (node.last_access + node.ttl, node.id)


POLICIES: dict[str, type[EvictionPolicy]] = {
    cls.name: cls for cls in (LRU, LFU, FIFO, MRU, FILO, Priority, SLRU, TLRU)
}


def make_policy(name: str) -> EvictionPolicy:
    """The policy called ``name``; raises :class:`ConfigError` listing the valid names."""
    cls = POLICIES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ConfigError(
            f"unknown eviction policy {name!r}; valid policies: {', '.join(sorted(POLICIES))}"
        )
    return cls()


class BelowOnlyFirst(EvictionPolicy):
    """The order of the primary component (component 0) on a tier below the device: the
    nodes held below the device only first, then the copies of nodes also on device, each
    in the inner policy's order."""

    def __init__(self, inner: EvictionPolicy) -> None:
        self._inner = inner.key
        self.monotone = inner.monotone  # type: ignore[misc]
        self.name = inner.name  # type: ignore[misc]

    def key(self, node: Node) -> SortKey:
        return (0 if node.values[0] is None else 1, *self._inner(node))


class EvictionQueue:
    """The eviction candidates of one component, in policy order.

    A binary heap with lazy invalidation: ``add`` pushes a key (O(log n)), ``discard`` only
    forgets membership (O(1)), ``pop`` skips stale entries. Membership maps node id to the
    exact key tuple pushed last, so a stale entry is recognised by identity. With a
    monotone policy an access costs nothing here: a stored key is a lower bound of the
    node's current key, so ``pop`` re-keys an outdated entry when it surfaces; otherwise
    ``touch`` pushes the new key.
    Members are the nodes whose structure makes them candidates, locked or not: locking
    costs the queue nothing; the evictor *parks* a locked member it pops (still a member,
    out of the heap) and unlocking puts it back (``unpark``).
    """

    __slots__ = ("_heap", "_key", "members", "monotone", "parked")

    def __init__(self, policy: EvictionPolicy) -> None:
        self._key = policy.key
        self.monotone = policy.monotone
        self._heap: list[SortKey] = []
        self.members: dict[int, tuple[SortKey, Node]] = {}
        self.parked: dict[int, Node] = {}

    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, node: Node) -> bool:
        return node.id in self.members

    def key_of(self, node: Node) -> SortKey:
        """``node``'s current key in this queue's order; pure."""
        return self._key(node)

    def add(self, node: Node) -> None:
        """Insert ``node`` or re-key it if present."""
        key = self._key(node)
        self.members[node.id] = (key, node)
        heapq.heappush(self._heap, key)
        if len(self._heap) > 2 * len(self.members) + 64:
            self._compact()

    def touch(self, node: Node) -> None:
        """Re-key ``node`` after its bookkeeping changed, if it is a member (a no-op with a
        monotone policy: see the class)."""
        if not self.monotone and node.id in self.members:
            if node.id in self.parked:
                self.park(node)
            else:
                self.add(node)

    def discard(self, node: Node) -> None:
        """Remove ``node`` if present."""
        if self.members.pop(node.id, None) is not None:
            self.parked.pop(node.id, None)
            if len(self._heap) > 2 * len(self.members) + 64:
                self._compact()

    def park(self, node: Node) -> None:
        """Keep a popped, locked ``node`` as a member outside the heap until unparked."""
        key = self._key(node)
        self.members[node.id] = (key, node)
        self.parked[node.id] = node

    def unpark(self, node: Node) -> None:
        """Put a parked ``node`` back in eviction order (no-op if it is not parked)."""
        if self.parked.pop(node.id, None) is not None:
            heapq.heappush(self._heap, self.members[node.id][0])

    def pop(self) -> Node | None:
        """Remove and return the first candidate in policy order, or ``None`` when empty."""
        heap, members, current_key = self._heap, self.members, self._key
        while heap:
            key = heapq.heappop(heap)
            entry = members.get(key[-1])
            if entry is None or entry[0] is not key:
                continue
            node = entry[1]
            current = current_key(node)
            if current != key:  # accessed since pushed (monotone): back in at its new key
                members[node.id] = (current, node)
                heapq.heappush(heap, current)
                continue
            del members[key[-1]]
            return node
        return None

    def ordered(self) -> list[Node]:
        """All candidates in eviction order (a sorted copy; for tests and inspection)."""
        return sorted((node for _, node in self.members.values()), key=self._key)

    def entries(self) -> dict[int, tuple[SortKey, Node]]:
        """Node id -> (current key, node) of every member; a copy, for inspection."""
        return {node_id: (self._key(node), node) for node_id, (_, node) in self.members.items()}

    def clear(self) -> None:
        self._heap.clear()
        self.members.clear()
        self.parked.clear()

    def _compact(self) -> None:
        parked = self.parked
        self._heap = [key for key, node in self.members.values() if node.id not in parked]
        heapq.heapify(self._heap)
