"""Attaching nodes held on one tier alone: how pages an L3 read brought into host slots join
the tree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .copy_plans import CopyPlanner, Planned
from .keys import Namespace
from .node import Node
from .state import TreeState
from .tiers import PRIMARY

Run = tuple[int, np.ndarray]
"""A component's fetched slots: (first key position, slots) — see Attacher.attach."""


class Attached(NamedTuple):
    """What :meth:`Attacher.attach` did: the new nodes, held on the tier alone (top-down),
    and, per component, the slots it did not use (``None`` where no run was given)."""

    nodes: list[Node]
    unused: list[np.ndarray | None]


def _unused(runs: Sequence[Run | None], attach_at: int, placed: Planned,
            per_token: Sequence[bool]) -> list[np.ndarray | None]:
    """Per component, the run's slots no new node took: a per-token run's positions before
    the attach point, a per-value run no node took."""
    taken = {index for _node, indices in placed for index in indices}
    unused: list[np.ndarray | None] = []
    for index, run in enumerate(runs):
        if run is None:
            unused.append(None)
        elif index not in taken:
            unused.append(run[1])
        else:
            unused.append(run[1][: max(0, attach_at - run[0])] if per_token[index]
                          else run[1][:0])
    return unused


class Attacher:
    """Attaching nodes held on one tier alone: a part of
    :class:`~radixkv.core.tree.TreeCore` (``tree.attacher``), built on its
    :class:`TreeState` and its copy planner (which places and announces the values)."""

    def __init__(self, state: TreeState, copies: CopyPlanner) -> None:
        self._state = state
        self._copies = copies
        self.components, self.tiers = state.components, state.tiers

    def attach(self, key: bytes, namespace: Namespace, runs: Sequence[Run | None],
               tier: int) -> Attached:
        """Cache ``tier``'s values (below the device) for the part of ``key`` (whole pages,
        ``end`` elements) the tree lacks, as nodes held on that tier alone (pages an L3
        read brought into host slots).
        ``runs[c]``: for a per-token component ``(begin, slots)``, its host slots of key
        positions ``[begin, end)``; for a per-value one ``(end, slots)``, its value at
        ``end``; ``None``: none fetched. The primary's run must start at or before where
        the tree's path ends. New nodes are cut where a per-token run begins; each gets
        every run that covers it, the last one the per-value runs. Nothing is attached (all
        slots come back) when the tree already covers the key, or when the node above would
        break the tier's closure (see :meth:`attachable`).
        Returns the new nodes and, per component, the slots not used (to free). Mutates
        structure, host values, ledgers and queues; O(depth + new nodes x components)."""
        state = self._state
        unit, page = state.unit, state.page_size
        end = len(key) // unit
        root = state.root(namespace)
        path, pos = state._walk(root, key)
        attach_at = pos // unit
        primary = runs[PRIMARY]
        assert primary is not None and primary[0] <= attach_at, "the primary run must reach"
        above = path[-1] if path else root
        if attach_at >= end or not self.attachable(above, tier):
            if not root.children:
                state._drop_root(root)
            return Attached([], [None if run is None else run[1] for run in runs])
        if above is not root and above.start + above.length > attach_at:
            above = state._split(above, attach_at - above.start)
        cuts = sorted({begin for index, run in enumerate(runs) if run is not None
                       for begin in (run[0],) if self.components[index].per_token
                       and attach_at < begin < end and begin % page == 0} | {end})
        nodes, parent, start = [], above, attach_at
        for cut in cuts:
            parent = state._add_leaf(parent, key[start * unit : cut * unit], 0,
                                    state.config.default_ttl)
            nodes.append(parent)
            start = cut
        placed = self._place_runs(nodes, runs, end, tier)
        self._copies.announce([(node, indices) for node, indices in placed if indices], tier)
        return Attached(nodes, _unused(runs, attach_at, placed,
                                       [c.per_token for c in self.components]))

    def attachable(self, node: Node, tier: int) -> bool:
        """Whether a node held on ``tier`` alone may hang below ``node`` (a root, or a node
        holding the primary on ``tier`` with no copy to it in flight on it or above); the
        storage tier asks before it restores below a prefix. Pure, O(depth)."""
        if node.parent is None:
            return True
        return self.tiers[tier].value(node, PRIMARY) is not None and \
            not self._copies.copying_above(node, tier)

    def _place_runs(self, nodes: list[Node], runs: Sequence[Run | None], end: int,
                    tier: int) -> list[tuple[Node, tuple[int, ...]]]:
        placed = []
        for node in nodes:
            indices = []
            for index, run in enumerate(runs):
                if run is None:
                    continue
                begin, slots = run
                if self.components[index].per_token:
                    if begin > node.start:
                        continue
                    value = slots[node.start - begin : node.start + node.length - begin]
                elif node.start + node.length == end:
                    value = slots
                else:
                    continue
                self._copies.place(node, index, tier, value.copy())
                indices.append(index)
            placed.append((node, tuple(indices)))
        return placed
