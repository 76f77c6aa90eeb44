"""Statistics, audits and snapshots of a PrefixCache (read-only; O(nodes + slots))."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.tiers import DEVICE, ledger_fields
from ..core.tree_audit import check_tree, snapshot_tree
from ..errors import InvariantError
from .allocation import AllocationState
from .lease import Lease
from .results import CacheStats, ComponentStats

if TYPE_CHECKING:
    from .prefix_cache import PrefixCache

COUNTERS = ("matches", "match_tokens", "hit_tokens", "capped_tokens", "admitted", "finished",
            "aborted", "failed", "inserted_tokens", "checkpoints_created", "checkpoints_used")


def stats(cache: PrefixCache) -> CacheStats:
    tree = cache.tree
    leases = cache.leases()  # one C-level copy: a metrics thread may read while others run
    device = tree.device
    components = {
        component.name: ComponentStats(
            *ledger_fields(device, component.index, device.protected[component.index],
                           cache.pools[component.index]),
            lost=cache.lost[component.index], lost_reason=component.lost_reason)
        for component in tree.components
    }
    return CacheStats(
        capacity=cache.pool.capacity,
        available=cache.pool.available,
        # bench sim: arithmetic, not a read-only view per lease (stats() at 175 leases:
        # 440 -> 47 us)
        held_by_requests=sum([lease.num_own for lease in leases]),
        components=components,
        nodes=len(tree.nodes) - len(tree.roots),
        active_leases=len(leases),
        evicted_tokens=sum(tree.evicted[0].values()),
        events_dropped=tree.log.dropped,
        **_counters_and_tiers(cache),
    )


def _counters_and_tiers(cache: PrefixCache) -> dict[str, Any]:
    """The cache's counters and each lower tier's stats under its field name."""
    fields: dict[str, Any] = dict(cache.counters)
    for tier in cache.lower:
        fields[tier.name] = tier.stats()
    return fields


def held_by_lease(cache: PrefixCache, lease: Lease) -> list[np.ndarray]:
    """Per component, the slots ``lease`` itself holds."""
    allocated = len(lease.allocated_slots)
    return [side.held(buffer, lease.tree_owned, allocated)
            for side, buffer in zip(cache.sides, lease.buffers)]


def check(cache: PrefixCache) -> None:
    """Raise :class:`InvariantError` on any inconsistency between tree, pools and leases."""
    tree = cache.tree
    check_tree(tree)
    held = [[tree.all_values(index), detached.held()]
            for index, detached in enumerate(cache.detached)]
    for lease in cache.leases():
        _check_lease(cache, lease)
        for parts, own in zip(held, held_by_lease(cache, lease)):
            parts.append(own)
    for pool, parts in zip(cache.pools.pools, held):
        pool.check(np.concatenate(parts))
    _check_allocations(cache)
    lower = cache.lower
    for tier, below in zip(lower, (*lower[1:], None)):
        tier.check(None if below is None else below.reserved())
    loading = {record.ticket for records in tree.copying.values() for record in records
               if record.tier == DEVICE}
    for lease in cache.leases():
        if not lease.waiting <= loading:
            raise InvariantError(f"lease {lease.id} waits for a copy not in flight")


def _check_allocations(cache: PrefixCache) -> None:
    """The pages callers hold are exactly those of the held allocations, each by its own."""
    expected = [np.zeros_like(detached.holders()) for detached in cache.detached]
    for allocation in cache._allocations.values():
        if allocation.status is not AllocationState.HELD or allocation.owner is not cache._owner:
            raise InvariantError(f"allocation {allocation.id} is registered but not held")
        for holders, detached, part in zip(expected, cache.detached, allocation.parts):
            pages = detached.pages(part)
            if holders[pages].any():
                raise InvariantError(f"allocation {allocation.id} shares a page")
            holders[pages] = allocation.id
    for index, (holders, detached) in enumerate(zip(expected, cache.detached)):
        if not np.array_equal(holders, detached.holders()):
            raise InvariantError(
                f"component {index}: the pages held by callers disagree with the held "
                "allocations")


def _check_lease(cache: PrefixCache, lease: Lease) -> None:
    tree = cache.tree
    if lease.lock is not None:
        tree.locker.check_receipt(lease.lock)
    elif lease.tree_owned:
        raise InvariantError(f"lease {lease.id} borrows from the tree without a lock")
    if lease.lock is not None and lease.tree_owned:
        node = lease.lock.node
        for side, buffer in zip(cache.sides, lease.buffers):
            if side.disagreement(buffer, tree, node, lease.tree_owned):
                raise InvariantError(f"lease {lease.id} disagrees with the tree on its "
                                     f"{side.component.name} slots")
    if len(lease.allocated_slots) != cache.pages_for(lease.num_tokens):
        raise InvariantError(f"lease {lease.id} holds the wrong number of pages")


def snapshot(cache: PrefixCache) -> Any:
    """The whole observable state as plain data."""
    leases = tuple(
        (lease.id, lease.state.value, lease.key_tokens(), lease.allocated_slots.tobytes(),
         lease.tree_owned, None if lease.lock is None else lease.lock.id,
         tuple(side.snapshot(buffer, lease.num_tokens)
               for side, buffer in zip(cache.sides, lease.buffers)))
        for lease in cache.leases()
    )
    pools = tuple(
        (pool.snapshot(), detached.holders().tobytes())
        for pool, detached in zip(cache.pools.pools, cache.detached)
    )
    lower = tuple(tier.snapshot() for tier in cache.lower)
    return (snapshot_tree(cache.tree), pools, leases, tuple(sorted(cache.counters.items())),
            lower,
            tuple(cache.lost),
            tuple(tuple(sorted(e.items())) for e in cache.tree.evicted))
