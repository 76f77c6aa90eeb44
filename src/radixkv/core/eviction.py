"""Eviction: free cached values in policy order, with the cascade between components, on
any tier of the tree (one loop and one drop path, given the tier)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import sub

import numpy as np

from ..errors import ConfigError
from .node import Node
from .policy import EvictionQueue
from .state import TreeState
from .tiers import DEVICE, PRIMARY, Tier
from .types import TreeEvict

Pause = Callable[[Node, int], bool]
"""``pause(node, component)``: whether eviction must stop before evicting that value so the
controller can first copy it to a lower tier (write-back)."""

Dropping = Callable[[Node, int, np.ndarray], None]
"""``dropping(node, component, slots)``: eviction is about to drop that value, the node still
linked (the storage tier writes a host value to L3 first, under write-back)."""

Freed = list[list[np.ndarray]]
"""Per component, the values an eviction took so far (joined once, at the end)."""


def _requeue(skipped: list[tuple[EvictionQueue, Node]] | None) -> None:
    """Put the locked candidates a lower tier's eviction skipped back into their queues."""
    for queue, node in skipped or ():
        queue.add(node)


class Evictor:
    """Eviction: a part of :class:`~radixkv.core.tree.TreeCore`, built on its
    :class:`TreeState` (whose containers it keeps references to). Component ``c`` evicts
    from its own candidate queue on the tier; evicting its value on a node also evicts the
    values there of every component that depends on it (the cascade, from the specs'
    declarations: FULL → SWA → MAMBA). On the device a node its component calls useless
    afterwards is removed whole — unless it holds values on a lower tier: then it is
    *demoted* (its device values go, the node stays, held below alone once its primary
    device value is gone). Below the device a node is removed once it holds its primary
    value on no tier."""

    def __init__(self, state: TreeState) -> None:
        self.components = state.components
        self.tiers, self.device, self.lower = state.tiers, state.device, state.lower
        self.tier_count = state.tier_count
        self.nodes = state.nodes
        self.queues, self.holes = state.queues, state.holes
        self.log = state.log
        self.page_bytes = state.page_bytes
        self.cascade, self._removal = state.cascade, state._removal
        self._sizes, self._ones, self._indices = state._sizes, state._ones, state._indices
        # bench evict: the state's bookkeeping bound once (calls cost what self's did)
        self._refresh = state._refresh
        self._drop_root = state._drop_root
        self._join = state._join

    def evict(self, budgets: Sequence[int], pause: Pause | None = None, *,
              tier: int = DEVICE, dropping: Dropping | None = None) -> TreeEvict:
        """Evict ``tier``'s values, per component at least ``budgets[c]`` (ledger units), in
        its policy order (below the device, the primary's puts the nodes held only there
        first), or everything evictable; locked nodes are skipped (a lock protects every
        tier, and an in-flight copy holds one). With ``pause``, stops at the first
        candidate it names (``TreeEvict.paused``; nothing of it evicted) so the controller
        can back it up and call again; each value is told to ``dropping`` before it goes.
        Returns the freed slots per component. Cost: O(log n) per evicted node. Raises
        :class:`ConfigError` for the wrong number of budgets or a tier the tree lacks."""
        if len(budgets) != len(self.components):
            raise ConfigError(f"expected {len(self.components)} budgets, got {len(budgets)}")
        # locked candidates: the device parks them (unlock puts them back); below, they go
        # back into their queue at the end of the call (bench opcodes evict, short
        # workload: one branch per call and no list per component on the device, as few
        # opcodes a call as the device-only loop before tiers were one object)
        skipped: list[tuple[EvictionQueue, Node]] | None
        if tier == DEVICE:
            on, skipped = self.device, None
        else:
            on, skipped = self._tier_below(tier), []
        freed: Freed = [[] for _ in self.components]
        evicted = [0] * len(budgets)  # as many (checked above), one attribute read fewer
        for index, queue in enumerate(on.queues):
            budget = budgets[index]
            while evicted[index] < budget:
                node = queue.pop()
                if node is None:
                    break
                if node.locks[index]:
                    if skipped is None:
                        queue.park(node)
                    else:
                        skipped.append((queue, node))
                    continue
                if pause is not None and pause(node, index):
                    queue.add(node)
                    _requeue(skipped)
                    return TreeEvict([self._join(p) for p in freed], evicted, node)
                self._evict_node(node, index, on, freed, evicted, dropping)
        if skipped:
            _requeue(skipped)
        return TreeEvict([self._join(parts) for parts in freed], evicted)

    def _tier_below(self, tier: int) -> Tier:
        """The tier numbered ``tier`` below the device; :class:`ConfigError` if the tree
        has none such."""
        if type(tier) is not int or not 0 < tier < self.tier_count:
            raise ConfigError(f"the tree has tiers 0..{self.tier_count - 1}, not {tier!r}")
        return self.tiers[tier]

    def _evict_node(self, node: Node, first: int, tier: Tier, freed: Freed,
                    evicted: list[int], dropping: Dropping | None) -> None:
        drop = self._drop
        drop(node, first, "budget", tier, freed, evicted, dropping)
        for index in self.cascade[first]:
            drop(node, index, "cascade", tier, freed, evicted, dropping)
        if not tier.removes[first](node):
            self._refresh(node)
            if self.lower and node.parent is not None and node.parent.parent is not None:
                self._refresh(node.parent)  # held below alone: it may be a leaf now
            return
        if self.lower and self._held_elsewhere(node, tier):
            self._demote(node, first, tier, freed, evicted, dropping)
            return
        for index in self._removal[first]:
            drop(node, index, "removal", tier, freed, evicted, dropping)
        self._remove_up(node, freed, evicted)

    def _held_elsewhere(self, node: Node, tier: Tier) -> bool:
        """Whether ``node`` holds a value on a tier other than ``tier``."""
        return any(other.holds_any(node) for other in self.tiers if other is not tier)

    def _demote(self, node: Node, first: int, tier: Tier, freed: Freed, evicted: list[int],
                dropping: Dropping | None) -> None:
        """Keep a node with values on another tier that eviction would have removed: without
        its primary value on ``tier`` it keeps no value there at all."""
        if tier.value(node, PRIMARY) is None:
            for index in self._removal[first]:
                self._drop(node, index, "removal", tier, freed, evicted, dropping)
        self._refresh(node)
        parent = node.parent
        if parent is not None and parent.parent is not None:
            self._refresh(parent)  # it may have become a leaf on that tier

    def _remove_up(self, node: Node, freed: Freed, evicted: list[int]) -> None:
        """Remove ``node`` (it holds nothing more), then every ancestor made useless (one
        holds device values alone: a node holding a value below is never useless)."""
        parent = node.parent
        self._remove(node)
        # bench evict: a parent with children left is kept without a call
        while parent is not None and not parent.children and self._useless(parent):
            for index in self._indices:
                self._drop(parent, index, "removal", self.device, freed, evicted, None)
            node, parent = parent, parent.parent
            self._remove(node)

    def _useless(self, node: Node) -> bool:
        """An unlocked leaf (not a root) that some component can never end a match in (a
        node holding values below the device is kept for load-back)."""
        if node.parent is None or node.children or any(node.locks) or node.id not in self.nodes:
            return False
        if self.lower and self._held_elsewhere(node, self.device):
            return False
        return any(component.useless_leaf(node) for component in self.components)

    def _drop(self, node: Node, index: int, reason: str, tier: Tier, freed: Freed,
              evicted: list[int], dropping: Dropping | None) -> None:
        """Evict component ``index``'s value on ``node`` on ``tier``, if it holds one (told
        to ``dropping`` first)."""
        slot = tier.slots[index]
        value = node.values[slot]
        if value is None:
            return
        if dropping is not None:
            dropping(node, index, value)
        if self.log.enabled and self.components[index].publishes_events:
            self.log.removed(node, tier.medium)
        sizer = self._sizes[index]  # bench evict: no call for a per-token value's size
        size = node.length if sizer is None else sizer(node)
        tier.cached[index] -= size
        if node.locks[index] and tier.keeps_protected:
            tier.protected[index] -= size
        tier.evicted[index][reason] += size
        evicted[index] += size
        freed[index].append(value)
        values = node.values.copy()  # a new list: match results keep the old one (see Node)
        values[slot] = None
        node.values = values
        tier.holes[index] += 1

    def _remove(self, node: Node) -> None:
        """Unlink a node that holds no value and has no children."""
        parent = node.parent
        assert parent is not None and not node.children
        del parent.children[node.key[: self.page_bytes]]
        del self.nodes[node.id]
        # bench evict: the device tier first, the others' only if any; every component's
        # hole count in one C loop, in place (the lists are the tiers')
        holes, ones = self.holes, self._ones
        holes[:] = map(sub, holes, ones)
        for queue in self.queues:
            queue.discard(node)
        if self.lower:
            for tier in self.lower:
                tier.holes[:] = map(sub, tier.holes, ones)
                for queue in tier.queues:
                    queue.discard(node)
        if parent.parent is None and not parent.children:
            self._drop_root(parent)
        else:
            self._refresh(parent)
