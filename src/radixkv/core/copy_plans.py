"""The tree's side of the tiers below the device: what to copy down a tier (a backup to the
host, a demotion further down), what a prefix can use once every tier's values count, what
a load-back must copy from each tier, and placing, taking back and announcing values around
a copy on any tier.

The tree never copies: these operations name nodes and values, and the controller moves
the bytes (through its copy engine) and tells the tree when a copy is acknowledged. Pure
unless they say otherwise; each costs O(path depth x components).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .keys import Namespace
from .node import Node
from .state import TreeState
from .tiers import DEVICE, HOST, PRIMARY, Tier
from .types import InFlight, TreeMatch

Planned = list[tuple[Node, tuple[int, ...]]]
"""Nodes (top-down) with the components whose value a copy moves for each."""


class _Merged:
    """A node as a component's match rules see it when every tier's value counts (per
    component, its value on the highest tier that holds one)."""

    __slots__ = ("end", "length", "start", "values")

    def __init__(self, node: Node, tiers: Sequence[Tier]) -> None:
        values = node.values
        merged = [values[slot] for slot in tiers[DEVICE].slots]
        for tier in tiers[1:]:
            merged = [value if value is not None else values[slot]
                      for value, slot in zip(merged, tier.slots)]
        self.values = merged
        self.start, self.length, self.end = node.start, node.length, node.start + node.length


class CopyPlanner:
    """Operations across the tiers of a tree (see :mod:`radixkv.core.tiers`): a part of
    :class:`~radixkv.core.tree.TreeCore` (``tree.copies``), built on its
    :class:`TreeState`; what the controllers of the tiers below the device call."""

    def __init__(self, state: TreeState) -> None:
        self._state = state
        self.components, self.tiers = state.components, state.tiers
        self.nodes, self.roots, self.copying = state.nodes, state.roots, state.copying
        self.log = state.log

    def backup_plan(self, nodes: Iterable[Node], source: int = DEVICE, to: int = HOST
                    ) -> Planned:
        """What copying ``nodes`` from tier ``source`` down to tier ``to`` writes (a backup
        to the host; a demotion from the host further down): each live node and every
        ancestor without the primary on ``to`` (that set stays closed towards the root),
        top-down, with the components it holds on ``source`` but not on ``to``; a node with
        a copy to ``to`` in flight on itself or above is left out (copied on a later call).
        Pure."""
        count, chosen = len(self.components), set()
        src, dest = self.tiers[source], self.tiers[to]
        order: list[Node] = []
        for node in nodes:
            if self.nodes.get(node.id) is not node or self.copying_above(node, to):
                continue
            chain = []
            current: Node | None = node
            while current is not None and current.parent is not None and \
                    current.id not in chosen:
                if current is node or dest.value(current, PRIMARY) is None:
                    chain.append(current)
                    chosen.add(current.id)
                current = current.parent
            order.extend(reversed(chain))
        order.sort(key=lambda n: n.start)  # parents before children: events stay ordered
        planned = []
        for node in order:
            missing = tuple(i for i in range(count) if src.value(node, i) is not None
                            and dest.value(node, i) is None)
            if missing:
                planned.append((node, missing))
        return planned

    def copying_above(self, node: Node, tier: int) -> bool:
        """Whether a copy to ``tier`` still in flight writes to ``node`` or an ancestor: on
        the host, a backup below it waits (should that copy fail, nothing may sit on the
        host below it). Pure, O(depth)."""
        copying = self.copying
        if not copying:
            return False
        current: Node | None = node
        while current is not None:
            if any(record.tier == tier for record in copying.get(current.id, ())):
                return True
            current = current.parent
        return False

    def match_all_tiers(self, key: bytes, namespace: Namespace) -> TreeMatch:
        """The longest prefix of ``key`` usable by every component when the values of every
        tier count, not just the device's (the match rules run on the merged values); never
        touches recency or structure. O(depth x tiers x components)."""
        node = self.roots.get(namespace)
        if node is None:
            return TreeMatch(0, None, [], 0)
        path, pos = self._state._walk(node, key)
        branch = pos // self._state.unit
        merged = [_Merged(n, self.tiers) for n in path]
        length = branch
        while True:
            candidate = length
            for component in self.components:
                candidate = component.usable_length(merged, candidate)  # type: ignore[arg-type]
            if candidate == length:
                break
            length = candidate
        path = [n for n in path if n.start < length]
        return TreeMatch(length, path[-1] if path else None, path, branch)

    def load_plan(self, node: Node, end: int, source: int = HOST) -> Planned:
        """What a load-back of the prefix ``[0, end)`` ending in ``node`` (a node boundary:
        lock it first) copies to the device from tier ``source``: per node, the components
        whose rules need its value (the nodes a lock pins for them) that it holds on
        ``source`` and on no tier above it (each value comes from the highest tier that
        holds it). Pure."""
        above = self.tiers[:source]
        below = self.tiers[source]
        needs: dict[int, tuple[Node, list[int]]] = {}
        for component in self.components:
            index = component.index
            boundary = component.lock_boundary(node, end)
            current = node
            while current.parent is not None and current.start >= boundary:
                if below.value(current, index) is not None and \
                        all(tier.value(current, index) is None for tier in above):
                    needs.setdefault(current.id, (current, []))[1].append(index)
                current = current.parent
        ordered = sorted(needs.values(), key=lambda entry: entry[0].start)
        return [(n, tuple(sorted(indices))) for n, indices in ordered]

    # ------------------------------------------------------------------ around a copy

    def track(self, record: InFlight, planned: Planned) -> None:
        """Record that ``record``'s copy writes ``planned``'s values (placed already);
        mutates only the tracking (O(nodes))."""
        for node, indices in planned:
            record.nodes[node.id] = (node, indices)
            self.copying.setdefault(node.id, []).append(record)

    def untrack(self, record: InFlight) -> None:
        """Forget ``record`` (its copy was acknowledged or failed)."""
        for node_id in record.nodes:
            records = self.copying.get(node_id)
            if records is not None and record in records:
                records.remove(record)
                if not records:
                    del self.copying[node_id]

    def place(self, node: Node, index: int, tier: int, value: np.ndarray) -> None:
        """Give ``node`` component ``index``'s ``value`` on ``tier`` (a copy's destination:
        the controller copies into it); mutates values, ledgers and queues."""
        if tier == DEVICE:  # the insert path's own setter (it publishes the value)
            self._state._set_value(node, index, value)
        else:
            self._state._set_below(self.tiers[tier], node, index, value)
        self._state._refresh(node)
        if node.parent is not None and node.parent.parent is not None:
            self._state._refresh(node.parent)  # its leaf status on that tier may change

    def take_back(self, node: Node, index: int, tier: int) -> np.ndarray | None:
        """Remove component ``index``'s value from ``node`` on ``tier`` without counting an
        eviction (a copy into it failed) and return it to be freed; mutates."""
        on = self.tiers[tier]
        slot = on.slot(index)
        value = node.values[slot]
        if value is None:
            return None
        size = self.components[index].value_size(node)
        on.cached[index] -= size
        if tier == DEVICE and node.locks[index]:
            on.protected[index] -= size
        if tier == DEVICE and self.log.enabled and self.components[index].publishes_events:
            self.log.removed(node)
        values = node.values.copy()  # a new list: see Node
        values[slot] = None
        node.values = values
        on.holes[index] += 1
        self._state._refresh(node)
        if node.parent is not None and node.parent.parent is not None:
            self._state._refresh(node.parent)
        return value

    def announce(self, planned: Planned, tier: int) -> None:
        """Publish BlockStored on ``tier``'s medium for the nodes of ``planned`` (a copy's
        nodes with the components it wrote on ``tier``, just acknowledged, or values an L3
        read placed there) whose copy wrote an event-publishing component's value: a node
        that already held it there (the batch added another component) was announced
        before. Top-down."""
        if not self.log.enabled:
            return
        publishing = {c.index for c in self.components if c.publishes_events}
        for node, indices in sorted(planned, key=lambda entry: entry[0].start):
            if self.nodes.get(node.id) is node and publishing.intersection(indices):
                self.log.stored(node, self.tiers[tier].medium)

    def protected_on(self, tier: int) -> list[int]:
        """Per component, the size of ``tier``'s values on nodes it has locked; O(nodes)."""
        on = self.tiers[tier]
        if on.keeps_protected:
            return list(on.protected)
        sizes = [0] * len(self.components)
        for node in list(self.nodes.values()):  # one C-level copy: safe against a mutator
            for component in self.components:
                index = component.index
                if node.locks[index] and on.value(node, index) is not None:
                    sizes[index] += component.value_size(node)
        return sizes
