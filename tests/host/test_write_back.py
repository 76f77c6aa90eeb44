"""Write-back eviction step by step: eviction pauses on a value the host lacks, the node is
backed up, and only after the acknowledgement is the device value freed (FULL, demotion)
or tombstoned (SWA and MAMBA values on internal nodes). A :class:`ProbeEngine` looks at the
cache at every poll the eviction's wait makes, while the copy is still in flight."""

from __future__ import annotations

from typing import Any

import numpy as np

from radixkv.host import HostTier

from ..components.support import evicted, seq
from .helpers import ProbeEngine, TierCache, device_of, host_ledger, host_of, kv_buffers, nodes


def test_write_back_frees_the_device_slots_only_after_the_backup_is_acknowledged() -> None:
    engine = ProbeEngine(polls=2)
    cache = TierCache(engine, capacity=8, host=HostTier(capacity=8, write_policy="write_back"))
    device, host = kv_buffers(engine, "full", 8, 8)
    lease = cache.admit(seq(0, 4))
    device[lease.slots] = np.arange(10, 18).reshape(4, 2)  # the engine computes [0, 4)
    cache.finish(lease)
    node = cache.match(seq(0, 4)).node
    full = cache.pools[0]

    def probe() -> Any:
        value = cache.tree.node(node)
        return (full.available, list(value.locks), device_of(cache, node),
                host_of(cache, node), host[:4].tolist())

    engine.probe = probe
    assert cache.evict(full=4) == {"full": 4}
    unwritten = [[0, 0]] * 4
    in_flight = (4, [1], [0, 1, 2, 3], [0, 1, 2, 3], unwritten)
    assert engine.seen == [in_flight, in_flight, in_flight, ("acknowledged", [1])]
    assert nodes(cache) == [(0, 4, None, [0, 1, 2, 3])]
    assert full.available == 8
    assert host[:4].tolist() == [[10, 11], [12, 13], [14, 15], [16, 17]]
    assert host_ledger(cache) == {"cached": 4, "evictable": 4, "protected": 0,
                                  "available": 4, "backed_up": 4, "loaded": 0}


def _branched(cache: TierCache) -> tuple[Any, Any]:
    """[0, 8) then [0, 4) + [20, 24): internal node [0, 4) and two leaves; leases then
    hold both leaves, so FULL is locked everywhere but the lighter component only at the
    ends. Returns the two leases."""
    cache.finish(cache.admit(seq(0, 8)))
    cache.finish(cache.admit([*seq(0, 4), *seq(20, 4)]))
    return cache.admit([*seq(0, 8), 99]), cache.admit([*seq(0, 4), *seq(20, 4), 99])


def test_an_internal_swa_value_is_tombstoned_only_after_its_backup_landed() -> None:
    engine = ProbeEngine(polls=1)
    cache = TierCache(engine, capacity=32, components=("full", "swa"), sliding_window=2,
                      host=HostTier(capacity=32, write_policy="write_back"))
    _branched(cache)
    top = cache.match(seq(0, 4)).node
    assert [list(n.locks) for n in sorted(cache.tree.nodes.values(), key=lambda n: n.id)
            if n.parent is not None and n.start == 0] == [[2, 0]]  # no SWA lock on [0, 4)

    def probe() -> Any:
        return device_of(cache, top, 1), host_of(cache, top, 1), list(
            cache.tree.node(top).locks)

    engine.probe = probe
    assert cache.evict(swa=4) == {"full": 0, "swa": 4}
    in_flight = ([0, 1, 2, 3], [0, 1, 2, 3], [3, 1])  # the copy's lock on both components
    assert engine.seen == [in_flight, in_flight, ("acknowledged", [1])]
    assert device_of(cache, top, 1) is None  # tombstoned on device
    assert host_of(cache, top, 1) == [0, 1, 2, 3]  # the host copy stays
    assert (device_of(cache, top), host_of(cache, top)) == ([0, 1, 2, 3], [0, 1, 2, 3])
    assert evicted(cache, "swa") == {"budget": 4}
    assert host_ledger(cache, "swa")["backed_up"] == 4
    assert host_ledger(cache, "full")["backed_up"] == 4
    found = cache.match(seq(0, 4))  # the tombstone cuts the device match...
    assert (found.length, found.host_length) == (0, 4)  # ...the host holds the window


def test_an_internal_mamba_state_is_tombstoned_only_after_its_backup_landed() -> None:
    engine = ProbeEngine(polls=1)
    cache = TierCache(engine, capacity=32, components=("full", "mamba"),
                      mamba_track_interval=4, mamba_states=8,
                      host=HostTier(capacity=32, states=4, write_policy="write_back"))
    lease = cache.admit(seq(0, 8))
    assert lease.state_slot == 0
    assert [cache.checkpoint(lease, 4), cache.checkpoint(lease, 8)] == [1, 2]
    cache.finish(lease)
    holder = cache.admit([*seq(0, 8), 99])  # pins the state at 8, not the one at 4
    assert holder.copy_state_from == 2
    top = cache.match(seq(0, 4)).node
    assert (device_of(cache, top, 1), cache.tree.node(top).locks) == ([1], [1, 0])

    def probe() -> Any:
        return device_of(cache, top, 1), host_of(cache, top, 1)

    engine.probe = probe
    assert cache.evict(mamba=1) == {"full": 0, "mamba": 1}
    assert engine.seen == [([1], [0]), ([1], [0]), ("acknowledged", [1])]
    assert (device_of(cache, top, 1), host_of(cache, top, 1)) == (None, [0])
    assert host_ledger(cache, "mamba") == {"cached": 1, "evictable": 1, "protected": 0,
                                           "available": 3, "backed_up": 1, "loaded": 0}
    # state 1 is free again: the tree holds 2, the holder works in 3
    assert holder.state_slot == 3 and cache.stats().components["mamba"].pool_available == 6
    found = cache.match(seq(0, 4))
    assert (found.length, found.host_length) == (0, 4)
    cache.abort(holder)


def test_a_write_back_node_that_finds_no_host_room_is_evicted_without_a_backup() -> None:
    cache = TierCache(ProbeEngine(polls=0), capacity=8,
                      host=HostTier(capacity=0, write_policy="write_back"))
    cache.finish(cache.admit(seq(0, 4)))
    assert cache.evict(full=4) == {"full": 4}
    assert nodes(cache) == []
    assert cache.stats().host.skipped_backups == 1


def test_a_write_back_node_whose_backup_fails_is_evicted_without_one() -> None:
    class Failing(ProbeEngine):
        def submit(self, copies: Any) -> int:
            ticket = super().submit(copies)
            self.fail(ticket)
            return ticket

    cache = TierCache(Failing(polls=1), capacity=8,
                      host=HostTier(capacity=8, write_policy="write_back"))
    cache.finish(cache.admit(seq(0, 4)))
    assert cache.evict(full=4) == {"full": 4}
    assert nodes(cache) == []
    assert cache.stats().host.failed_backups == 1
    assert host_ledger(cache)["available"] == 8
