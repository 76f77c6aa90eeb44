"""Tiers: where a node's per-component value lives.

A node's state is addressed as (component, tier). Each node keeps one flat ``values`` list
with a slot per component and tier; a :class:`Tier` says which slot is whose
(:meth:`Tier.slot`), and no other code computes one. The device tier's slots are the
component indices themselves, so a walk over device values costs what it did before tiers
existed. A component reads its value as ``node.values[self.index]``: the tree binds one view
of each component per tier (:meth:`TreeState.view`), whose ``index`` is that tier's slot, so
a component's match, lock and eviction rules run unchanged on any tier. Locks are per
component, not per tier: a lock protects a prefix on every tier.

A tree has the device tier, and the host tier when its configuration asks for two tiers
(``TreeConfig.tiers``); a tree of one tier keeps one slot per component, so a cache without a
host tier pays nothing for the axis.

Across tiers the tree keeps three rules (checked by the audit): the nodes holding the
primary component's value (FULL, component 0) on device form a subtree closed towards the
root, and so do those holding it on the host; every node holds the primary value on some
tier; a node without it on device (*host-only*) holds no device value at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from .node import Node

DEVICE = 0
"""The tier of device (accelerator) memory: the KV slots the model reads."""

HOST = 1
"""The tier of host (CPU) memory: copies of device values, and host-only nodes."""

TIER_NAMES = ("device", "host")
"""Names of the tiers, by tier number (as in stats, metrics and events)."""

TIERS = len(TIER_NAMES)
"""The most tiers a tree can have."""

HOST_MEDIUM = "CPU"
"""The medium KV events name for host values (the device's is ``TreeConfig.medium``)."""

PRIMARY = 0
"""The component every node's existence rests on (the first one, FULL): a node is kept while
it holds this component's value on some tier."""


class Tier:
    """One tier of a tree: its number (``index``, 0 the device), ``name`` and event
    ``medium``, and its place in a node's ``values``. A tier's slots are consecutive, the
    device's first, one per component; this class is the one place that computes them."""

    __slots__ = ("index", "medium", "name", "offset", "slots")

    def __init__(self, index: int, components: int, medium: str) -> None:
        self.index = index
        self.name = TIER_NAMES[index]
        self.medium = medium
        self.offset = index * components
        """The slot of component 0's value on this tier."""
        self.slots = tuple(range(self.offset, self.offset + components))
        """Per component, its slot (what :meth:`slot` answers, for a hot loop to index)."""

    def slot(self, component: int) -> int:
        """Index in ``Node.values`` of ``component``'s value on this tier; O(1)."""
        return self.slots[component]

    def value(self, node: Node, component: int) -> np.ndarray | None:
        """``component``'s value on ``node`` on this tier (``None``: it holds none)."""
        return node.values[self.slots[component]]

    def holds_any(self, node: Node) -> bool:
        """Whether ``node`` holds any value on this tier; O(components)."""
        values = node.values
        return any(values[slot] is not None for slot in self.slots)

    def __repr__(self) -> str:
        return f"Tier({self.name}, slots={self.offset}..{self.offset + len(self.slots) - 1})"
