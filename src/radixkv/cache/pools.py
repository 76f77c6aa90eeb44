"""The device slot pools of a cache, one per component."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import ConfigError, InvariantError
from ..memory import EnginePool, SlotAllocator, SlotPool, SlotPoolConfig
from .cache_config import CacheConfig

NO_PAGES = np.zeros(0, dtype=np.int64)
NO_PAGES.flags.writeable = False
"""The shared, read-only empty array a pool asked for nothing gives."""


class ComponentPools:
    """``pools[c]`` holds the slots of component ``c`` (KV slots of per-token components,
    state slots of the others), shaped by its spec: radixkv's own :class:`SlotPool`, or the
    engine's allocator where ``allocators`` names the component (engine-owned slots). They
    hand out what is free and take it back; they never evict (the cache's
    :class:`~radixkv.cache.room.DeviceRoom` makes room first)."""

    def __init__(self, config: CacheConfig,
                 allocators: Mapping[str, SlotAllocator] | None = None) -> None:
        self.pools = _build_pools(config, allocators or {})
        self.nothing = [NO_PAGES] * len(self.pools)
        """Per pool, the shared empty array (what a pool asked for nothing gives)."""

    def __getitem__(self, index: int) -> SlotPool | EnginePool:
        return self.pools[index]

    def allocate_pages(self, needs: Sequence[int]) -> list[np.ndarray]:
        """Allocate ``needs[c]`` slots (whole pages) in each pool from what is free now (the
        caller made room: :class:`~radixkv.cache.room.DeviceRoom`); page ids per pool, a
        shared read-only empty array where nothing was asked. Raises
        :class:`InvariantError` when a pool is short (a caller's bug; what was allocated
        before it stays allocated)."""
        allocated = []
        for pool, need in zip(self.pools, needs):
            if not need:  # bench admit_finish (short, p16): a fully cached prompt, no call
                allocated.append(NO_PAGES)
                continue
            pages = pool.alloc_pages(-(-need // pool.page_size))
            if pages is None:  # the caller made room: this cannot happen
                raise InvariantError(f"{pool.name}: could not allocate {need} after eviction")
            allocated.append(pages)
        return allocated

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
