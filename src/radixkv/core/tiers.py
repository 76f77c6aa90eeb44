"""Tiers: where a node's per-component value lives.

A node's state is addressed as (component, tier). Each node keeps one flat ``values`` list
with a slot per component and tier; a :class:`Tier` says which slot is whose
(:meth:`Tier.slot`), and no other code computes one. The device tier's slots are the
component indices themselves, so a walk over device values costs what it did before tiers
existed. A component reads its value as ``node.values[self.index]``: the tree binds one view
of each component per tier (:meth:`TreeState.view`), whose ``index`` is that tier's slot, so
a component's match, lock and eviction rules run unchanged on any tier. Locks are per
component, not per tier: a lock protects a prefix on every tier.

A tree has the device tier, the host tier when its configuration asks for two tiers
(``TreeConfig.tiers``) and a third below it (a disk, a peer's memory) when it asks for three;
a tree of one tier keeps one slot per component, so a cache without a host tier pays nothing
for the axis. Every tier below the device is alike to the tree: nothing in core/ names one.

Across tiers the tree keeps three rules (checked by :func:`check_tier_rules`): on every
tier, the nodes holding the primary component's value (FULL, component 0) there form a
subtree closed towards the root; every node holds the primary value on some tier; a node
without it on device (*held below only*) holds no device value at all. A load-back copies
each value from the highest tier below the device that holds it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .policy import BelowOnlyFirst, EvictionPolicy, EvictionQueue

if TYPE_CHECKING:
    import numpy as np

    from ..components.base import Component
    from .node import Node

DEVICE = 0
"""The tier of device (accelerator) memory: the KV slots the model reads."""

HOST = 1
"""The tier of host (CPU) memory: copies of device values, and host-only nodes."""

TIER_NAMES = ("device", "host", "disk")
"""Names of the tiers, by tier number (as in stats, metrics and events)."""

TIERS = len(TIER_NAMES)
"""The most tiers a tree can have."""

HOST_MEDIUM = "CPU"
"""The medium KV events name for host values (the device's is ``TreeConfig.medium``)."""

LOWER_MEDIA = (HOST_MEDIUM, "DISK")
"""The media KV events name for the tiers below the device, from the host down."""

PRIMARY = 0
"""The component every node's existence rests on (the first one, FULL): a node is kept while
it holds this component's value on some tier."""

EVICTION_REASONS = ("budget", "cascade", "removal")
"""Why eviction took a value: ``budget`` (asked for), ``cascade`` (a lighter value on a node
that lost a heavier one), ``removal`` (a node removed whole)."""


def bound(component: Component, slot: int) -> Component:
    """A copy of ``component`` whose rules read value slot ``slot`` (another tier's)."""
    view = copy.copy(component)
    view.index = slot
    return view


class Tier:
    """One tier of a tree: its number (``index``, 0 the device), ``name`` and event
    ``medium``; its place in a node's ``values`` (its slots are consecutive, the device's
    first, one per component: this class is the one place that computes them); and its
    bookkeeping, per component: the view whose rules read its slot, the candidate queue,
    the ledger and the evicted counts.

    Ledger: ``cached[c]`` is the size of every value of component ``c`` on this tier,
    ``protected[c]`` the part on nodes ``c`` has locked (kept on the device alone: a lock
    would otherwise pay for every tier; see ``CopyPlanner.protected_on``), ``holes[c]`` how
    many nodes (roots aside) lack its value here. ``evicted[c][reason]`` counts what
    eviction took here, by reason (:data:`EVICTION_REASONS`); it survives :meth:`reset`.
    """

    __slots__ = ("cached", "candidacy", "evicted", "holes", "index", "keeps_protected",
                 "medium", "name", "offset", "primaries", "protected", "queues", "removes",
                 "slots", "views")

    def __init__(self, index: int, components: Sequence[Component], medium: str,
                 policy: EvictionPolicy, tiers: int) -> None:
        """``components``: the tree's, bound to their device slots (their indices);
        ``tiers``: how many the tree has."""
        count = len(components)
        self.index = index
        self.name = TIER_NAMES[index]
        self.medium = medium
        self.keeps_protected = index == DEVICE
        """Whether :attr:`protected` is kept (the device's alone; below it stays 0)."""
        self.offset = index * count
        """The slot of component 0's value on this tier."""
        self.slots = tuple(range(self.offset, self.offset + count))
        """Per component, its slot (what :meth:`slot` answers, for a hot loop to index)."""
        self.views = list(components) if index == DEVICE else \
            [bound(component, slot) for component, slot in zip(components, self.slots)]
        """Per component, the view whose rules read this tier's slot."""
        self.queues = [EvictionQueue(BelowOnlyFirst(policy) if index != DEVICE and
                                     position == PRIMARY else policy)
                       for position in range(count)]
        """Per component, its eviction candidates on this tier (below the device, the
        primary's order puts the nodes held below the device only first)."""
        self.candidacy = tuple(zip(self.views, self.queues))
        self.primaries = tuple(tier * count + PRIMARY for tier in range(tiers))
        """The primary's slot on every tier of the tree."""
        self.removes: list[Callable[[Node], bool]] = \
            [view.removes_node for view in self.views] if index == DEVICE else \
            [self.held_nowhere] * count
        """Per component, whether a node that lost its value (and the cascade) here leaves
        the tree: on the device, as the component says (matches are served there); below,
        once the node holds its primary value on no tier."""
        self.evicted = [dict.fromkeys(EVICTION_REASONS, 0) for _ in range(count)]
        self.cached = [0] * count
        self.protected = [0] * count
        self.holes = [0] * count

    def reset(self) -> None:
        """Forget the ledger and the candidates (the tree dropped every node); the evicted
        counts stay. Mutates in place (the tree's parts hold these lists); O(components)."""
        for ledger in (self.cached, self.protected, self.holes):
            ledger[:] = [0] * len(ledger)
        for queue in self.queues:
            queue.clear()

    def slot(self, component: int) -> int:
        """Index in ``Node.values`` of ``component``'s value on this tier; O(1)."""
        return self.slots[component]

    def value(self, node: Node, component: int) -> np.ndarray | None:
        """``component``'s value on ``node`` on this tier (``None``: it holds none)."""
        return node.values[self.slots[component]]

    def held_nowhere(self, node: Node) -> bool:
        """Whether ``node`` holds its primary value on no tier of the tree; O(tiers)."""
        values = node.values
        return all(values[slot] is None for slot in self.primaries)

    def holds_any(self, node: Node) -> bool:
        """Whether ``node`` holds any value on this tier; O(components)."""
        values = node.values
        return any(values[slot] is not None for slot in self.slots)

    def __repr__(self) -> str:
        return f"Tier({self.name}, slots={self.offset}..{self.offset + len(self.slots) - 1})"


class PoolCounts(Protocol):
    """What a tier's statistics read of a component's pool."""

    @property
    def capacity(self) -> int: ...

    @property
    def available(self) -> int: ...


@dataclass(frozen=True, slots=True)
class LedgerStats:
    """One component's ledger on one tier, in its units (tokens for FULL and SWA, states
    for MAMBA): ``cached`` = ``evictable`` (unlocked) + ``protected`` (on nodes it has
    locked); its pool's capacity and free slots; ``evicted`` by reason — ``budget`` (asked
    for), ``cascade`` (a heavier component's eviction took it along), ``removal`` (its node
    was removed whole)."""

    cached: int
    evictable: int
    protected: int
    pool_capacity: int
    pool_available: int
    evicted: dict[str, int]


def ledger_fields(tier: Tier, component: int, protected: int, pool: PoolCounts
                  ) -> tuple[int, int, int, int, int, dict[str, int]]:
    """:class:`LedgerStats`' fields, in order, for ``component`` on ``tier`` (``protected``:
    its size there on locked nodes, see ``CopyPlanner.protected_on``); plain reads, O(1)."""
    cached = tier.cached[component]
    return (cached, cached - protected, protected, pool.capacity, pool.available,
            dict(tier.evicted[component]))
