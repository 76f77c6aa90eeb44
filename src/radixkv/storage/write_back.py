"""L3 writes under the ``write_back`` host policy: pages go to the store when host eviction
drops them, parents before children, and at ``close()`` what is still on the host.

Host eviction drops leaves first, so a child's pages would reach the store (and the STORAGE
stream) before its parent's, and a shared head that stays hot on the host would never reach
it at all: its children could not be found by a prefix lookup (FULL needs every page from
the root) and the stream would name a parent it never announced. So the first drop below a
node not yet in the store writes that node's path first, top-down, in the same puts; a
path that cannot be written (a host backup still in flight on it) keeps its children out
of the store too. ``in_store`` remembers, per (node id, component), the host values that
are in the store already (written on a child's behalf, or read from it), so their own drop
writes nothing; an entry goes when that value is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..core.copy_plans import Planned
from ..core.node import Node
from ..core.tiers import HOST, PRIMARY
from ..core.tree import TreeCore
from .writes import StorageWrites


class WriteBack:
    """The write-back half of a storage tier: the host tier's sink (one per cache, owner
    thread only)."""

    def __init__(self, tree: TreeCore, writes: StorageWrites) -> None:
        self.tree, self.writes = tree, writes
        self.host = tree.tiers[HOST]
        self.in_store: set[tuple[int, int]] = set()

    def restored(self, nodes: Iterable[Node]) -> None:
        """``nodes`` came from the store: their host values are not written back."""
        for node in nodes:
            self._mark(node)

    def backed_up(self, planned: Planned) -> None:
        """Nothing: a backup reaches the store when host eviction drops it."""

    def dropping(self, node: Node, index: int, slots: np.ndarray) -> None:
        """Host eviction drops component ``index``'s host value ``slots`` of ``node``:
        write it, after whatever of its path the store lacks (or nothing, see the module)."""
        if (node.id, index) in self.in_store:
            self.in_store.discard((node.id, index))
            return
        path = self._unwritten_path(node)
        if path is None:
            return
        for above in path:
            self._write(above)
        self.writes.queue(node, index, slots)

    def flush(self) -> None:
        """Write every host value not in the store yet, each node after its parent (for
        ``close()``); a subtree below a node whose host backup is in flight is left out.
        O(nodes x components)."""
        for root in list(self.tree.roots.values()):
            stack = list(root.children.values())
            while stack:
                node = stack.pop()
                if not self._writable(node):
                    continue
                self._write(node)
                stack.extend(node.children.values())

    def prune(self) -> None:
        """Forget entries of nodes no longer in the tree (a reset, or a split's stale
        half); amortised O(1) a call."""
        if len(self.in_store) > 4 * len(self.tree.nodes) + 1024:
            nodes = self.tree.nodes
            self.in_store = {entry for entry in self.in_store if entry[0] in nodes}

    def clear(self) -> None:
        self.in_store.clear()

    def _unwritten_path(self, node: Node) -> list[Node] | None:
        """The ancestors of ``node`` (top-down) whose primary the store lacks; ``None`` when
        one of them cannot be written now."""
        path = []
        current = node.parent
        while current is not None and current.parent is not None:
            if (current.id, PRIMARY) not in self.in_store:
                if not self._writable(current):
                    return None
                path.append(current)
            current = current.parent
        path.reverse()
        return path

    def _writable(self, node: Node) -> bool:
        """Whether ``node``'s host rows can be read now: it holds the primary on the host
        and no host backup is writing to it."""
        if self.host.value(node, PRIMARY) is None:
            return False
        return not any(record.tier == HOST for record in self.tree.copying.get(node.id, ()))

    def _write(self, node: Node) -> None:
        for index, slot in enumerate(self.host.slots):
            value = node.values[slot]
            if value is not None and (node.id, index) not in self.in_store:
                self.writes.queue(node, index, value)
                self.in_store.add((node.id, index))

    def _mark(self, node: Node) -> None:
        for index, slot in enumerate(self.host.slots):
            if node.values[slot] is not None:
                self.in_store.add((node.id, index))
