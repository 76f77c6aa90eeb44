"""One eviction loop and one drop path for every tier: ``TreeCore.evict`` takes the tier,
validates it before anything changes, and keeps each tier's ledger and evicted counts."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv import CacheConfig, HostTier, PrefixCache
from radixkv.core.node import Node
from radixkv.core.tiers import DEVICE, HOST, LedgerStats
from radixkv.errors import ConfigError


def cached(host: bool) -> PrefixCache:
    cache = PrefixCache(CacheConfig(capacity=64, page_size=4,
                                    host=HostTier(capacity=64) if host else None))
    cache.finish(cache.admit(list(range(1, 13))))
    cache.wait()
    return cache


@pytest.mark.parametrize("tier", [HOST, 2, -1, True, "host", None])
def test_evicting_a_tier_the_tree_lacks_raises_and_changes_nothing(tier: object) -> None:
    cache = cached(host=False)
    before = cache.snapshot()
    with pytest.raises(ConfigError, match=r"tiers 0\.\.0"):
        cache.tree.evict([12], tier=tier)  # type: ignore[arg-type]
    assert cache.snapshot() == before
    cache.check_invariants()


def test_the_device_tier_tells_dropping_of_each_value_as_a_lower_tier_does() -> None:
    cache = cached(host=False)
    told: list[tuple[int, list[int]]] = []

    def dropping(node: Node, index: int, slots: np.ndarray) -> None:
        told.append((index, slots.tolist()))

    result = cache.tree.evict([12], dropping=dropping)
    cache.pools.free_all(result.freed)
    cache.check_invariants()
    assert told == [(0, list(range(12)))] and result.evicted == [12]
    assert cache.tree.tiers[DEVICE].evicted[0] == {"budget": 12, "cascade": 0, "removal": 0}


def test_host_eviction_counts_on_the_host_tier_and_leaves_the_device_ledger() -> None:
    cache = cached(host=True)
    device, host = cache.tree.tiers
    assert host.cached == [12] and device.cached == [12]  # backed up: on both tiers
    result = cache.tree.evict([12], tier=HOST)
    assert cache.host is not None
    cache.host.free_host(result.freed)
    cache.check_invariants()
    assert result.evicted == [12] and host.cached == [0] and device.cached == [12]
    assert host.evicted[0]["budget"] == 12 and device.evicted[0]["budget"] == 0
    assert cache.match(list(range(1, 13))).length == 12  # the device copy still serves


def test_the_stats_of_each_tier_read_that_tiers_ledger() -> None:
    cache = cached(host=True)
    cache.finish(cache.admit([*range(1, 9), 50, 51, 52, 53]))  # a second leaf below [0, 8)
    cache.wait()
    assert cache.host is not None
    cache.host.evict_host([4])  # the host loses one leaf; the device keeps both
    stats = cache.stats()
    assert stats.host is not None
    device, host = stats.components["full"], stats.host.components["full"]
    assert isinstance(device, LedgerStats) and isinstance(host, LedgerStats)
    assert (device.cached, device.evictable, device.protected) == (16, 16, 0)
    assert (host.cached, host.evictable, host.protected) == (12, 12, 0)
    assert device.evicted == {"budget": 0, "cascade": 0, "removal": 0}
    assert host.evicted == {"budget": 4, "cascade": 0, "removal": 0}
    assert (device.pool_available, host.pool_available) == (48, 52)
    cache.check_invariants()
