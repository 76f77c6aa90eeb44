"""Tiers: where a node's per-component value lives.

A node's state is addressed as (component, tier). Each node keeps one flat ``values`` list
with a slot per component and tier, ``tier * num_components + component``, so the device
tier's slots are the component indices themselves and a walk over device values costs what
it did before tiers existed. A component reads its value as ``node.values[self.index]``: the
tree binds one view of each component per tier (:meth:`TreeState.view`), whose ``index`` is
that tier's slot, so a component's match, lock and eviction rules run unchanged on any tier.
Locks are per component, not per tier: a lock protects a prefix on every tier.

Only the device tier exists so far; the host tier adds a name here and a view per component.
"""

from __future__ import annotations

DEVICE = 0
"""The tier of device (accelerator) memory: the KV slots the model reads."""

TIER_NAMES = ("device",)
"""Names of the tiers, by tier number (as in stats, metrics and events)."""

TIERS = len(TIER_NAMES)


def value_slot(component: int, tier: int, num_components: int) -> int:
    """Index in ``Node.values`` of ``component``'s value on ``tier``."""
    return tier * num_components + component
