"""Results and receipts the tree hands out."""

from __future__ import annotations

from typing import NewType

import numpy as np

from .node import Node
from .tiers import Tier

NodeId = NewType("NodeId", int)
"""Integer handle of a tree node; never reused, not even after ``reset()``."""


class Lock:
    """Receipt of :meth:`TreeCore.lock`: what exactly was pinned, to undo exactly that.

    ``boundaries[c]`` is the key position where component ``c`` stopped pinning on the way up
    from ``node``; splits keep it exact because an upper half keeps the original start.
    """

    __slots__ = ("boundaries", "id", "lease", "node", "owner")

    def __init__(self, owner: object, lock_id: int, node: Node, boundaries: tuple[int, ...]):
        self.owner = owner
        self.id = lock_id
        self.node = node
        self.boundaries = boundaries
        self.lease: int | None = None
        """The id of the lease holding this lock, if a lease does (set by the cache)."""

    @property
    def node_id(self) -> NodeId:
        return NodeId(self.node.id)

    def __repr__(self) -> str:
        return f"Lock(id={self.id}, node={self.node.id})"


class TreeMatch:
    """A match inside the tree: the usable ``length`` (key elements), the deepest node that
    covers it (``None`` when ``length`` is 0), the covering path top-down, and ``branch``:
    how far the key runs along the tree structurally (where it leaves the cached tree)."""

    # bench match_prefix: a slots class builds in about half the time of a NamedTuple
    __slots__ = ("branch", "length", "node", "path")

    def __init__(self, length: int, node: Node | None, path: list[Node], branch: int) -> None:
        self.length = length
        self.node = node
        self.path = path
        self.branch = branch

    def __repr__(self) -> str:
        node = None if self.node is None else self.node.id
        return (f"TreeMatch(length={self.length}, node={node}, path={len(self.path)} nodes, "
                f"branch={self.branch})")


class InFlight:
    """An in-flight copy as the tree tracks it: the nodes it writes to on ``tier`` (its
    destination) and, per node, the components whose values it writes. The tree keeps every
    node of a live record; a split adds the new upper half with its origin's components (the
    record follows the split, for the values the split gave that half), so acknowledging or
    failing the copy reaches every half."""

    __slots__ = ("nodes", "ticket", "tier")

    def __init__(self, ticket: int, tier: int) -> None:
        self.ticket = ticket
        self.tier = tier
        self.nodes: dict[int, tuple[Node, tuple[int, ...]]] = {}

    def follow(self, origin: Node, upper: Node, tier: Tier) -> None:
        """``origin`` was split and ``upper`` is its new upper half: it takes the origin's
        components whose value on ``tier`` (this record's) the split gave it."""
        indices = tuple(i for i in self.nodes[origin.id][1] if tier.value(upper, i) is not None)
        self.nodes[upper.id] = (upper, indices)


class TreeInsert:
    """Outcome of an insert: the node where the inserted key ends (``None`` when nothing was
    cached), how much of the key the tree now holds (``length``; components may cut it
    short), how many elements were new to the tree, and per component the caller's slots
    the tree did not keep, to be freed. Read it; nothing changes it after the insert."""

    # bench insert (short, p1): a plain slots class builds in about a third of the time of
    # a frozen dataclass (0.86 -> 0.3 us)
    __slots__ = ("freed", "length", "new_length", "node")

    def __init__(self, node: Node | None, length: int, new_length: int,
                 freed: list[np.ndarray]) -> None:
        self.node = node
        self.length = length
        self.new_length = new_length
        self.freed = freed

    def __repr__(self) -> str:
        node = None if self.node is None else self.node.id
        return (f"TreeInsert(node={node}, length={self.length}, "
                f"new_length={self.new_length})")


class TreeEvict:
    """Outcome of an eviction: per component the slots freed and the ledger size evicted;
    ``paused``: the node eviction stopped at (its value must be copied first), if any. Read
    it; nothing changes it after the eviction."""

    # bench sim: a plain slots class, as TreeInsert (a frozen dataclass sets each field
    # through object.__setattr__); one is built per eviction
    __slots__ = ("evicted", "freed", "paused")

    def __init__(self, freed: list[np.ndarray], evicted: list[int],
                 paused: Node | None = None) -> None:
        self.freed = freed
        self.evicted = evicted
        self.paused = paused

    def __repr__(self) -> str:
        paused = None if self.paused is None else self.paused.id
        return f"TreeEvict(evicted={self.evicted}, paused={paused})"
