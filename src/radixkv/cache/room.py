"""Making room in a cache's device pools: eviction, by whatever reclaims device slots.

The pools hand out what is free; this part decides that eviction must run, and how much, and
asks the reclaimer it was built with to run it: the tree's plain eviction, or the host
tier's (which may first back a value up, and may wait for backups in flight).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..core.node import Node
from ..core.tree import TreeCore
from ..errors import InvariantError, OutOfSlotsError
from .pools import NO_PAGES, ComponentPools


class Reclaimer(Protocol):
    """What frees device slots when the pools are short."""

    def evict_device(self, budgets: Sequence[int]) -> list[int]:
        """Evict per component at least ``budgets[c]`` device units (or all that is
        evictable) and give their slots back to the pools; returns the units evicted per
        component. Mutates tree and pools."""

    def settle_backups(self) -> bool:
        """Wait for the copies in flight whose locks keep device values from eviction;
        whether there were any (then more may be evictable)."""


class TreeReclaimer:
    """The reclaimer of a cache without a host tier: the tree's eviction, nothing to wait
    for."""

    def __init__(self, tree: TreeCore, pools: ComponentPools) -> None:
        self.tree = tree
        self._free_all = pools.free_all  # bench evict: one attribute, not two

    def evict_device(self, budgets: Sequence[int]) -> list[int]:
        result = self.tree.evict(budgets)
        self._free_all(result.freed)
        return result.evicted

    def settle_backups(self) -> bool:
        return False


class DeviceRoom:
    """Room in the device pools (``pools``), made by ``reclaimer``: checks that a request
    fits, evicts where the pools are short, then allocates."""

    def __init__(self, tree: TreeCore, pools: ComponentPools, reclaimer: Reclaimer) -> None:
        self.tree, self.device, self.reclaimer = tree, pools, reclaimer
        self.pools = pools.pools
        """The pools themselves, per component."""
        self._nothing = pools.nothing
        self._evict = reclaimer.evict_device  # bench insert/admit: one attribute, not two

    def has_room(self, needs: Sequence[int]) -> bool:
        """Whether every pool has ``needs[c]`` slots free now (no eviction); pure."""
        # bench insert: a plain loop, no generator object per call
        for pool, need in zip(self.pools, needs):  # noqa: SIM110
            if need > pool.available:
                return False
        return True

    def ensure_room(self, needs: Sequence[int], lock_at: Node | None = None,
                    lock_end: int = 0) -> None:
        """Raise :class:`OutOfSlotsError` unless, for every pool, free slots plus what
        eviction could free (unlocked values, less what a lock of ``[0, lock_end)`` at
        ``lock_at``, about to be taken, will protect) cover ``needs``. Pure (but for waiting
        on backups in flight, whose locks keep values from eviction); O(components), plus
        O(depth) for the lock's preview when a pool is short."""
        try:
            self._check_room(needs, lock_at, lock_end)
        except OutOfSlotsError:
            if not self.reclaimer.settle_backups():
                raise
            self._check_room(needs, lock_at, lock_end)

    def _check_room(self, needs: Sequence[int], lock_at: Node | None, lock_end: int) -> None:
        tree, pinned = self.tree, None
        for index, (pool, need) in enumerate(zip(self.pools, needs)):
            if need <= pool.available:
                continue
            evictable = tree.cached[index] - tree.protected[index]
            if lock_at is not None:
                # bench admit: the preview is walked only when a pool is short
                if pinned is None:
                    pinned = tree.locker.lock_preview(lock_at, lock_end)
                evictable -= pinned[index]
            if pool.available + evictable < need:
                raise OutOfSlotsError(
                    f"{pool.name}: need {need} slots but only {pool.available} are free and "
                    f"{evictable} evictable (capacity {pool.capacity})"
                )

    def allocate(self, needs: Sequence[int]) -> list[np.ndarray]:
        """Allocate ``needs[c]`` slots (whole pages) in each pool, evicting first where short.
        Call :meth:`ensure_room` first: then this cannot fail. A pool asked for nothing
        gives a shared, read-only empty array."""
        if len(needs) == 1:  # bench sim (FULL alone): one pool, no per-pool lists or zips
            need = needs[0]
            if not need:
                return [NO_PAGES]
            pool = self.pools[0]
            if need > pool.available:
                self.make_room(needs)
            ids = pool.alloc_pages(-(-need // pool.page_size))
            if ids is None:  # ensure_room proved this cannot happen
                raise InvariantError(f"{pool.name}: could not allocate {need} after eviction")
            return [pool.slots_of(ids)]
        if not any(needs):  # bench admit_finish (short, p1): fully cached, 1.46 -> 0.42 us
            return self._nothing.copy()
        if not self.has_room(needs):
            self.make_room(needs)
        return [pool.slots_of(part) if len(part) else part
                for pool, part in zip(self.pools, self.device.allocate_pages(needs))]

    def make_room(self, needs: Sequence[int]) -> None:
        """Evict until every pool has room for ``needs`` (a few rounds: cascades free more);
        after :meth:`ensure_room` passed, they then have it."""
        if len(needs) == 1:  # bench sim (FULL alone): one round, no lists, no cascade
            lacking = needs[0] - self.pools[0].available
            if lacking > 0:
                self._evict([lacking])
            if needs[0] <= self.pools[0].available:
                return
        for _ in range(len(self.pools) + 1):
            short = [max(0, need - pool.available) for pool, need in zip(self.pools, needs)]
            if not any(short):
                break
            self._evict(short)
