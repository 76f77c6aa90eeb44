"""The slot pools of a cache, one per component, and making room in them by eviction."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..core.node import Node
from ..core.tree import TreeCore
from ..errors import ConfigError, InvariantError, OutOfSlotsError
from ..memory import EnginePool, SlotAllocator, SlotPool, SlotPoolConfig
from .config import CacheConfig

_NO_PAGES = np.zeros(0, dtype=np.int64)
_NO_PAGES.flags.writeable = False


class ComponentPools:
    """``pools[c]`` holds the slots of component ``c`` (KV slots of per-token components,
    state slots of the others), shaped by its spec: radixkv's own :class:`SlotPool`, or the
    engine's allocator where ``allocators`` names the component (engine-owned slots). Room
    is made by evicting from the tree."""

    def __init__(self, config: CacheConfig, tree: TreeCore,
                 allocators: Mapping[str, SlotAllocator] | None = None) -> None:
        self.tree = tree
        self.evictor: Callable[[Sequence[int]], list[int]] = self.evict
        """How room is made: :meth:`evict`, or the host tier's stepwise eviction."""
        self.settle: Callable[[], bool] | None = None
        """Waits for copies in flight that hold values locked (the host tier's); True if
        there were any. :meth:`ensure_room` calls it before it refuses."""
        self.pools = _build_pools(config, allocators or {})
        self._nothing = [_NO_PAGES] * len(self.pools)

    def __getitem__(self, index: int) -> SlotPool | EnginePool:
        return self.pools[index]

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
            if self.settle is None or not self.settle():
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
                    pinned = tree.lock_preview(lock_at, lock_end)
                evictable -= pinned[index]
            if pool.available + evictable < need:
                raise OutOfSlotsError(
                    f"{pool.name}: need {need} slots but only {pool.available} are free and "
                    f"{evictable} evictable (capacity {pool.capacity})"
                )

    def has_room(self, needs: Sequence[int]) -> bool:
        """Whether every pool has ``needs[c]`` slots free now (no eviction); pure."""
        # bench insert: a plain loop, no generator object per call
        for pool, need in zip(self.pools, needs):  # noqa: SIM110
            if need > pool.available:
                return False
        return True

    def allocate(self, needs: Sequence[int]) -> list[np.ndarray]:
        """Allocate ``needs[c]`` slots (whole pages) in each pool, evicting first where short.
        Call :meth:`ensure_room` first: then this cannot fail. A pool asked for nothing
        gives a shared, read-only empty array."""
        if len(needs) == 1:  # bench sim (FULL alone): one pool, no per-pool lists or zips
            need = needs[0]
            if not need:
                return [_NO_PAGES]
            pool = self.pools[0]
            if need > pool.available:
                self._evict_for(needs)
            ids = pool.alloc_pages(-(-need // pool.page_size))
            if ids is None:  # ensure_room proved this cannot happen
                raise InvariantError(f"{pool.name}: could not allocate {need} after eviction")
            return [pool.slots_of(ids)]
        if not any(needs):  # bench admit_finish (short, p1): fully cached, 1.46 -> 0.42 us
            return self._nothing.copy()
        pages = self.allocate_pages(needs)
        return [pool.slots_of(part) if len(part) else part
                for pool, part in zip(self.pools, pages)]

    def allocate_pages(self, needs: Sequence[int], room: bool = False) -> list[np.ndarray]:
        """:meth:`allocate`, returning page ids per pool instead of slots (a shared,
        read-only empty array where nothing was asked); ``room``: the caller saw
        :meth:`has_room` hold just now."""
        if not room and not self.has_room(needs):  # bench insert: no eviction round
            self._evict_for(needs)
        allocated = []
        for pool, need in zip(self.pools, needs):
            if not need:  # bench admit_finish (short, p16): a fully cached prompt, no call
                allocated.append(_NO_PAGES)
                continue
            pages = pool.alloc_pages(-(-need // pool.page_size))
            if pages is None:  # ensure_room proved this cannot happen
                raise InvariantError(f"{pool.name}: could not allocate {need} after eviction")
            allocated.append(pages)
        return allocated

    def _evict_for(self, needs: Sequence[int]) -> None:
        """Evict until every pool has room for ``needs`` (a few rounds: cascades free more)."""
        if len(needs) == 1:  # bench sim (FULL alone): one round, no lists, no cascade
            lacking = needs[0] - self.pools[0].available
            if lacking > 0:
                self.evictor([lacking])
            if needs[0] <= self.pools[0].available:
                return
        for _ in range(len(self.pools) + 1):
            short = [max(0, need - pool.available) for pool, need in zip(self.pools, needs)]
            if not any(short):
                break
            self.evictor(short)

    def evict(self, budgets: Sequence[int]) -> list[int]:
        """Evict per component at least ``budgets[c]`` units and free them; what was
        evicted per component."""
        result = self.tree.evict(budgets)
        self.free_all(result.freed)
        return result.evicted

    def free_all(self, slots: Sequence[np.ndarray]) -> None:
        """Give each component's slots back to its pool. Only slots the cache holds come
        here (tree values, lease buffers, parts of one issued allocation): whole, distinct
        pages by construction, so the pools' slot-level validation is not repeated (the
        pool still refuses a page it does not hold allocated)."""
        for pool, part in zip(self.pools, slots):
            if len(part):
                # bench insert/release: page ids straight to the ring, no re-validation
                pool.free_pages(pool.pages_of(part), distinct=True)

    def free_pages(self, pages: Sequence[np.ndarray]) -> None:
        """Give each component's pages (page ids the cache holds) back to its pool."""
        for pool, part in zip(self.pools, pages):
            if len(part):
                pool.free_pages(part)

    def reset(self) -> None:
        for pool in self.pools:
            pool.reset()


def _build_pools(config: CacheConfig,
                 allocators: Mapping[str, SlotAllocator]) -> list[SlotPool | EnginePool]:
    """One pool per component: the engine's allocator where one is named, whose page size
    and capacity must be the component's; else a :class:`SlotPool` of the spec's shape.
    Raises :class:`ConfigError` for a name no component has, or a shape that differs."""
    shapes = config.pool_shapes()
    unknown = set(allocators) - {name for name, _ in shapes}
    if unknown:
        raise ConfigError(f"allocators for {sorted(unknown)}: no such component (this cache "
                          f"has {', '.join(name for name, _ in shapes)})")
    pools: list[SlotPool | EnginePool] = []
    for name, shape in shapes:
        allocator = allocators.get(name)
        if allocator is None:
            pools.append(SlotPool(SlotPoolConfig(capacity=shape.capacity,
                                                 page_size=shape.page_size, name=name)))
            continue
        pool = EnginePool(allocator, name)
        if (pool.page_size, pool.capacity) != (shape.page_size, shape.capacity):
            raise ConfigError(
                f"{name}: the engine's allocator has page size {pool.page_size} and "
                f"{pool.capacity} slots; the cache's configuration says {shape.page_size} "
                f"and {shape.capacity}")
        pools.append(pool)
    return pools
