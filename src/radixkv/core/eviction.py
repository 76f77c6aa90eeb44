"""Eviction: free cached values in policy order, with the cascade between components."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError
from .node import Node
from .state import TreeState
from .types import TreeEvict


class Evictor(TreeState):
    """Component ``c`` evicts from its own candidate queue; evicting its value on a node also
    evicts the values there of every component that depends on it (the cascade, from the
    specs' declarations: FULL → SWA → MAMBA), and a node its component calls useless
    afterwards is removed whole."""

    def evict(self, budgets: Sequence[int]) -> TreeEvict:
        """Evict, per component, at least ``budgets[c]`` (ledger units) in policy order, or
        everything evictable. Returns the freed slots per component. Cost: O(log n) per
        evicted node. Raises :class:`ConfigError` if ``budgets`` has the wrong length."""
        if len(budgets) != len(self.components):
            raise ConfigError(f"expected {len(self.components)} budgets, got {len(budgets)}")
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
                self._evict_node(node, index, freed, evicted)
        return TreeEvict([self._join(parts) for parts in freed], evicted)

    def _evict_node(
        self, node: Node, first: int, freed: list[list[np.ndarray]], evicted: list[int]
    ) -> None:
        self._drop(node, first, "budget", freed, evicted)
        cascade = self.cascade[first]
        for index in cascade:
            self._drop(node, index, "cascade", freed, evicted)
        if not self.components[first].removes_node(node):
            self._refresh(node)
            return
        for index in self._removal[first]:
            self._drop(node, index, "removal", freed, evicted)
        parent = node.parent
        self._remove(node)
        while parent is not None and self._useless(parent):
            for index in range(len(self.components)):
                self._drop(parent, index, "removal", freed, evicted)
            node, parent = parent, parent.parent
            self._remove(node)

    def _useless(self, node: Node) -> bool:
        """An unlocked leaf (not a root) that some component can never end a match in."""
        if node.parent is None or node.children or any(node.locks) or node.id not in self.nodes:
            return False
        return any(component.useless_leaf(node) for component in self.components)

    def _drop(
        self, node: Node, index: int, reason: str, freed: list[list[np.ndarray]],
        evicted: list[int],
    ) -> None:
        value = node.values[index]
        if value is None:
            return
        component = self.components[index]
        if self.log.enabled and component.publishes_events:
            self.log.removed(node)
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

    def _remove(self, node: Node) -> None:
        """Unlink a node that holds no value and has no children."""
        parent = node.parent
        assert parent is not None and not node.children
        del parent.children[node.key[: self.page_bytes]]
        del self.nodes[node.id]
        for index in range(len(self.components)):
            self.holes[index] -= 1
        for queue in self.queues:
            queue.discard(node)
        if parent.parent is None and not parent.children:
            self._drop_root(parent)
        else:
            self._refresh(parent)

    def _drop_root(self, root: Node) -> None:
        """Forget an empty namespace (per-request salts would otherwise pile up roots)."""
        del self.roots[root.namespace]
        del self.nodes[root.id]
