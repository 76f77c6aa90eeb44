"""Room in the device pools: the pools never evict; the room asks the reclaimer it was built
with (issue 32: parts handed in at construction, no callback assigned afterwards)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from radixkv import CacheConfig, HostTier, PrefixCache
from radixkv.cache.pools import ComponentPools
from radixkv.cache.room import DeviceRoom, TreeReclaimer
from radixkv.errors import InvariantError, OutOfSlotsError


class Recorder:
    """A reclaimer that records what the room asks and evicts through the tree."""

    def __init__(self, inner: TreeReclaimer, settles: bool) -> None:
        self.inner, self.settles = inner, settles
        self.evictions: list[list[int]] = []
        self.settled = 0

    def evict_device(self, budgets: Sequence[int]) -> list[int]:
        self.evictions.append(list(budgets))
        return self.inner.evict_device(budgets)

    def settle_backups(self) -> bool:
        self.settled += 1
        return self.settles


def full_cache() -> PrefixCache:
    """A cache of 16 slots, all of them cached and unlocked."""
    cache = PrefixCache(CacheConfig(capacity=16))
    cache.finish(cache.admit(list(range(16))))
    assert cache.pool.available == 0 and cache.sizes() == (16, 0)
    return cache


def test_the_pools_never_evict_they_refuse_when_short() -> None:
    cache = full_cache()
    with pytest.raises(InvariantError, match="could not allocate 4"):
        cache.pools.allocate_pages([4])
    assert cache.sizes() == (16, 0)  # nothing was evicted
    cache.check_invariants()


def test_the_room_evicts_through_the_reclaimer_it_was_built_with() -> None:
    cache = full_cache()
    recorder = Recorder(TreeReclaimer(cache.tree, cache.pools), settles=False)
    room = DeviceRoom(cache.tree, cache.pools, recorder)
    room.ensure_room([4])
    slots = room.allocate([4])
    assert recorder.evictions == [[4]] and len(slots[0]) == 4
    assert cache.sizes() == (0, 0)  # its one node of 16 tokens went whole
    cache.pools.free_all(slots)
    cache.check_invariants()


def test_a_room_short_even_after_eviction_asks_the_reclaimer_to_settle_then_refuses() -> None:
    cache = full_cache()
    lock = cache.lock(cache.match(list(range(16))))
    recorder = Recorder(TreeReclaimer(cache.tree, cache.pools), settles=True)
    room = DeviceRoom(cache.tree, cache.pools, recorder)
    with pytest.raises(OutOfSlotsError, match="0 evictable"):
        room.ensure_room([4])
    assert recorder.settled == 1 and recorder.evictions == []
    cache.unlock(lock)
    cache.check_invariants()


def test_a_cache_without_a_host_tier_reclaims_through_the_tree_with_one() -> None:
    plain = PrefixCache(CacheConfig(capacity=16))
    with_host = PrefixCache(CacheConfig(capacity=16, host=HostTier(capacity=32)))
    assert type(plain.reclaimer) is TreeReclaimer
    assert with_host.reclaimer is with_host.host and with_host.room.reclaimer is with_host.host
    assert isinstance(plain.pools, ComponentPools) and plain.room.pools is plain.pools.pools
