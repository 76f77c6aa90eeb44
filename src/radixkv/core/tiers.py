"""Tiers: where a node's per-component value lives.

A node's state is addressed as (component, tier). Each node keeps one flat ``values`` list
with a slot per component and tier, ``tier * num_components + component``, so the device
tier's slots are the component indices themselves and a walk over device values costs what
it did before tiers existed. A component reads its value as ``node.values[self.index]``: the
tree binds one view of each component per tier (:meth:`TreeState.view`), whose ``index`` is
that tier's slot, so a component's match, lock and eviction rules run unchanged on any tier.
Locks are per component, not per tier: a lock protects a prefix on every tier.

A tree has the device tier, and the host tier when its configuration asks for two tiers
(``TreeConfig.tiers``); a tree of one tier keeps one slot per component, so a cache without a
host tier pays nothing for the axis.

Across tiers the tree keeps three rules (checked by the audit): the nodes holding the
primary component's value (FULL, component 0) on device form a subtree closed towards the
root, and so do those holding it on the host; every node holds the primary value on some
tier; a node without it on device (*host-only*) holds no device value at all.
"""

from __future__ import annotations

DEVICE = 0
"""The tier of device (accelerator) memory: the KV slots the model reads."""

HOST = 1
"""The tier of host (CPU) memory: copies of device values, and host-only nodes."""

TIER_NAMES = ("device", "host")
"""Names of the tiers, by tier number (as in stats, metrics and events)."""

TIERS = len(TIER_NAMES)
"""The most tiers a tree can have."""

PRIMARY = 0
"""The component every node's existence rests on (the first one, FULL): a node is kept while
it holds this component's value on some tier."""


def value_slot(component: int, tier: int, num_components: int) -> int:
    """Index in ``Node.values`` of ``component``'s value on ``tier``."""
    return tier * num_components + component
