"""Eviction: free cached values in policy order, with the cascade between components, on
the device tier and (with two tiers) the host tier."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..errors import ConfigError
from .node import Node
from .state import TreeState
from .tiers import HOST, PRIMARY
from .types import TreeEvict

Pause = Callable[[Node, int], bool]
"""``pause(node, component)``: whether eviction must stop before evicting that value so the
controller can first copy it to the host (write-back)."""

Dropping = Callable[[Node, int, np.ndarray], None]
"""``dropping(node, component, slots)``: host eviction is about to drop that host value, the
node still linked (the storage tier writes it to L3 first, under write-back)."""


class Evictor(TreeState):
    """Component ``c`` evicts from its own candidate queue; evicting its value on a node also
    evicts the values there of every component that depends on it (the cascade, from the
    specs' declarations: FULL → SWA → MAMBA), and a node its component calls useless
    afterwards is removed whole — unless it holds host values: then it is *demoted* (its
    device values go, the node stays, host-only once its primary device value is gone)."""

    def evict(self, budgets: Sequence[int], pause: Pause | None = None) -> TreeEvict:
        """Evict, per component, at least ``budgets[c]`` (ledger units) in policy order, or
        everything evictable. Returns the freed slots per component. With ``pause``, stops
        at the first candidate it names (``TreeEvict.paused``; nothing of it evicted) so the
        controller can back it up and call again. Cost: O(log n) per evicted node. Raises
        :class:`ConfigError` if ``budgets`` has the wrong length."""
        self._check_budgets(budgets)
        freed: list[list[np.ndarray]] = [[] for _ in self.components]
        evicted = [0] * len(self.components)
        for component, queue in zip(self.components, self.queues):
            index = component.index
            while evicted[index] < budgets[index]:
                node = queue.pop()
                if node is None:
                    break
                if node.locks[index]:
                    queue.park(node)
                    continue
                if pause is not None and pause(node, index):
                    queue.add(node)
                    return TreeEvict([self._join(p) for p in freed], evicted, node)
                self._evict_node(node, index, freed, evicted)
        return TreeEvict([self._join(parts) for parts in freed], evicted)

    def _check_budgets(self, budgets: Sequence[int]) -> None:
        if len(budgets) != len(self.components):
            raise ConfigError(f"expected {len(self.components)} budgets, got {len(budgets)}")

    def _evict_node(
        self, node: Node, first: int, freed: list[list[np.ndarray]], evicted: list[int]
    ) -> None:
        self._drop(node, first, "budget", freed, evicted)
        cascade = self.cascade[first]
        for index in cascade:
            self._drop(node, index, "cascade", freed, evicted)
        if not self.components[first].removes_node(node):
            self._refresh(node)
            if self.lower and node.parent is not None and node.parent.parent is not None:
                self._refresh(node.parent)  # host-only children: it may be a leaf now
            return
        if self.lower and self._held_below(node):
            self._demote(node, first, freed, evicted)
            return
        for index in self._removal[first]:
            self._drop(node, index, "removal", freed, evicted)
        self._remove_up(node, freed, evicted)

    def _demote(
        self, node: Node, first: int, freed: list[list[np.ndarray]], evicted: list[int]
    ) -> None:
        """Keep a node with host values that eviction would have removed: without its
        primary device value it keeps no device value at all (host-only)."""
        if node.values[PRIMARY] is None:
            for index in self._removal[first]:
                self._drop(node, index, "removal", freed, evicted)
        self._refresh(node)
        parent = node.parent
        if parent is not None and parent.parent is not None:
            self._refresh(parent)  # it may have become a device leaf

    def _remove_up(
        self, node: Node, freed: list[list[np.ndarray]], evicted: list[int]
    ) -> None:
        """Remove ``node`` (it holds nothing more), then every ancestor made useless."""
        parent = node.parent
        self._remove(node)
        while parent is not None and self._useless(parent):
            for index in range(len(self.components)):
                self._drop(parent, index, "removal", freed, evicted)
            node, parent = parent, parent.parent
            self._remove(node)

    def _held_below(self, node: Node) -> bool:
        """Whether ``node`` holds a value on a tier below the device."""
        return any(tier.holds_any(node) for tier in self.lower)

    def _useless(self, node: Node) -> bool:
        """An unlocked leaf (not a root) that some component can never end a match in (a
        node holding host values is kept for load-back)."""
        if node.parent is None or node.children or any(node.locks) or node.id not in self.nodes:
            return False
        if self.lower and self._held_below(node):
            return False
        return any(component.useless_leaf(node) for component in self.components)

    def _drop(
        self, node: Node, index: int, reason: str, freed: list[list[np.ndarray]],
        evicted: list[int],
    ) -> None:
        """Evict component ``index``'s device value on ``node``, if it holds one."""
        # bench evict: the device tier on its own path (3579 -> 3376 opcodes a call, full
        # page 1, bench opcodes); a device value's slot is its component's index
        value = node.values[index]
        if value is None:
            return
        component = self.components[index]
        if self.log.enabled and component.publishes_events:
            self.log.removed(node, self.config.medium)
        size = component.value_size(node)
        self.cached[index] -= size
        if node.locks[index]:
            self.protected[index] -= size
        self.evicted[index][reason] += size
        evicted[index] += size
        freed[index].append(value)
        values = node.values.copy()  # a new list: match results keep the old one (see Node)
        values[index] = None
        node.values = values
        self.holes[index] += 1

    def _drop_host(
        self, node: Node, index: int, reason: str, freed: list[list[np.ndarray]],
        evicted: list[int], dropping: Dropping | None,
    ) -> None:
        """Evict component ``index``'s host value on ``node``, if it holds one (told to
        ``dropping`` first)."""
        slot = self.tiers[HOST].slot(index)
        value = node.values[slot]
        if value is None:
            return
        component = self.components[index]
        if dropping is not None:
            dropping(node, index, value)
        if self.log.enabled and component.publishes_events:
            self.log.removed(node, self.tiers[HOST].medium)
        size = component.value_size(node)
        host = self.tiers[HOST]
        host.cached[index] -= size
        host.evicted[index][reason] += size
        evicted[index] += size
        freed[index].append(value)
        values = node.values.copy()
        values[slot] = None
        node.values = values
        host.holes[index] += 1

    def _remove(self, node: Node) -> None:
        """Unlink a node that holds no value and has no children."""
        parent = node.parent
        assert parent is not None and not node.children
        del parent.children[node.key[: self.page_bytes]]
        del self.nodes[node.id]
        holes = self.holes  # bench evict: the device ledger first, the host's only if any
        for index in self._indices:
            holes[index] -= 1
        for queue in self.queues:
            queue.discard(node)
        if self.lower:
            holes = self.tiers[HOST].holes
            for index in self._indices:
                holes[index] -= 1
            for queue in self.tiers[HOST].queues:
                queue.discard(node)
        if parent.parent is None and not parent.children:
            self._drop_root(parent)
        else:
            self._refresh(parent)

    def _drop_root(self, root: Node) -> None:
        """Forget an empty namespace (per-request salts would otherwise pile up roots)."""
        del self.roots[root.namespace]
        del self.nodes[root.id]

    # ------------------------------------------------------------------ host tier

    def evict_host(self, budgets: Sequence[int], dropping: Dropping | None = None) -> TreeEvict:
        """Evict host values, per component at least ``budgets[c]`` (ledger units), in the
        host order (the primary's: host-only nodes first, each in policy order), skipping
        locked nodes (a lock protects every tier, and an in-flight copy holds one). The
        cascade applies on the host tier; a host-only node that loses its primary host
        value is removed. Each value is told to ``dropping`` before it goes. Returns the
        freed host slots per component. Cost: O(log n) per node. Raises
        :class:`ConfigError` for the wrong number of budgets."""
        self._check_budgets(budgets)
        freed: list[list[np.ndarray]] = [[] for _ in self.components]
        evicted = [0] * len(self.components)
        for index, queue in enumerate(self.tiers[HOST].queues):
            skipped = []
            while evicted[index] < budgets[index]:
                node = queue.pop()
                if node is None:
                    break
                if node.locks[index]:
                    skipped.append(node)
                    continue
                self._evict_host_node(node, index, freed, evicted, dropping)
            for node in skipped:
                queue.add(node)
        return TreeEvict([self._join(parts) for parts in freed], evicted)

    def _evict_host_node(
        self, node: Node, first: int, freed: list[list[np.ndarray]], evicted: list[int],
        dropping: Dropping | None,
    ) -> None:
        self._drop_host(node, first, "budget", freed, evicted, dropping)
        for index in self.cascade[first]:
            self._drop_host(node, index, "cascade", freed, evicted, dropping)
        if node.values[PRIMARY] is None and self.tiers[HOST].value(node, PRIMARY) is None:
            for index in range(len(self.components)):
                self._drop_host(node, index, "removal", freed, evicted, dropping)
            self._remove_up(node, freed, evicted)
            return
        self._refresh(node)
        parent = node.parent
        if parent is not None and parent.parent is not None:
            self._refresh(parent)  # it may have become a host leaf
