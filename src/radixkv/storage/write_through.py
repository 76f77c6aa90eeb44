"""L3 writes under a write-through host policy: each host backup goes to the store once the
copy engine acknowledged it, parents before children (a backup plan is top-down)."""

from __future__ import annotations

import numpy as np

from ..core.copy_plans import Planned
from ..core.node import Node
from ..core.tiers import HOST
from ..core.tree import TreeCore
from .writes import StorageWrites


class WriteThrough:
    """The write-through half of a storage tier: the host tier's sink (one per cache, owner
    thread only)."""

    def __init__(self, tree: TreeCore, writes: StorageWrites) -> None:
        self.tree, self.writes = tree, writes
        self.host = tree.tiers[HOST]

    def backed_up(self, planned: Planned) -> None:
        """Queue the host values a backup just placed, of the nodes still in the tree."""
        host = self.host
        for node, indices in planned:  # top-down (backup_plan): parents are put first
            if self.tree.nodes.get(node.id) is node:
                for index in indices:
                    value = host.value(node, index)
                    if value is not None:
                        self.writes.queue(node, index, value)

    def dropping(self, node: Node, index: int, slots: np.ndarray) -> None:
        """Nothing: the value went to the store when it was backed up."""
