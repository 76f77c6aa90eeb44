"""Host pressure and copies in flight, step by step (FULL, page 1): host eviction in policy
order with host-only nodes first, locked and in-flight nodes skipped; device pressure while
copies are pending; and splits of a node whose copy is in flight (the in-flight record
follows the split: the acknowledgement, or the failure, reaches both halves)."""

from __future__ import annotations

from radixkv.cache import LeaseState
from radixkv.errors import OutOfSlotsError
from radixkv.host import HostTier

from ..audited import assert_refused
from ..components.support import locks, seq
from .helpers import TierCache, delayed, demoted, host_ledger, node_at, nodes

A, B, C = seq(0, 4), seq(10, 4), seq(20, 4)


def _fifo(polls: int = 0, host: int = 8) -> TierCache:
    return TierCache(delayed(polls), capacity=16, policy="fifo", host=HostTier(capacity=host))


def test_host_eviction_takes_host_only_nodes_first_then_policy_order() -> None:
    cache = _fifo()
    cache.finish(cache.admit(A))
    cache.finish(cache.admit(B))
    cache.wait()
    holder = cache.admit([*A, 99])
    assert cache.evict(full=4) == {"full": 4}  # A is older (fifo) but locked: B goes
    cache.abort(holder)
    assert nodes(cache) == [(0, 4, seq(0, 4), seq(0, 4)), (0, 4, None, seq(4, 4))]
    cache.finish(cache.admit(C))  # its backup needs 4 host slots: the host is full
    # fifo alone would take A (created first); the host-only B goes first, whole
    assert nodes(cache) == [(0, 4, seq(0, 4), seq(0, 4)), (0, 4, seq(9, 4), seq(4, 4))]
    assert node_at(cache, C) and cache.match(B).host_length == 0
    host = cache.stats().host.components["full"]
    assert host.evicted == {"budget": 4, "cascade": 0, "removal": 0}
    cache.wait()
    cache.finish(cache.admit(seq(30, 4)))  # no host-only node left: fifo takes A
    cache.wait()
    assert nodes(cache) == [(0, 4, seq(0, 4), None), (0, 4, seq(9, 4), seq(4, 4)),
                            (0, 4, [13, 14, 15, 4], seq(0, 4))]


def test_host_eviction_skips_a_node_whose_load_back_is_in_flight() -> None:
    cache = _fifo(polls=3)
    cache.finish(cache.admit(A))
    cache.finish(cache.admit(B))
    cache.wait()
    assert cache.evict(full=8) == {"full": 8}  # both host-only now
    loader = cache.admit(A, load_back=True)  # A locked by its copy and the lease
    assert not loader.ready
    cache.finish(cache.admit(C))  # needs host room: A is first in fifo order, but locked
    found = cache.match(B)
    assert (found.length, found.host_length) == (0, 0)  # B went, whole
    # A keeps its host copy (the copy's source) and C took B's host slots
    assert [(s, e, h) for s, e, _, h in nodes(cache)] == [(0, 4, seq(0, 4)),
                                                          (0, 4, seq(4, 4))]
    cache.wait()
    assert loader.ready and cache.match(A).length == 4


def test_host_eviction_skips_a_node_a_lease_holds() -> None:
    cache = _fifo()
    cache.finish(cache.admit(A))
    cache.finish(cache.admit(B))
    cache.wait()
    holder = cache.admit(A)  # the host copy of A is protected by the lock
    assert host_ledger(cache)["protected"] == 4
    cache.finish(cache.admit(C))
    assert [(s, e, h) for s, e, _, h in nodes(cache)] == [
        (0, 4, seq(0, 4)), (0, 4, None), (0, 4, seq(4, 4))]  # B's host copy went
    cache.abort(holder)


def test_device_pressure_settles_the_backups_in_flight_then_succeeds() -> None:
    cache = TierCache(delayed(5), capacity=8, host=HostTier(capacity=16))
    cache.finish(cache.admit(seq(0, 8)))
    assert cache.stats().components["full"].protected == 8  # the backup's lock
    assert cache.stats().host.copies_in_flight == 1
    lease = cache.admit(C)  # no room until the backup lands and [0, 8) can be demoted
    assert lease.ready and lease.slots.tolist() == seq(0, 4)
    assert nodes(cache) == [(0, 8, None, seq(0, 8))]
    assert cache.stats().host.copies_in_flight == 0
    assert host_ledger(cache) == {"cached": 8, "evictable": 8, "protected": 0,
                                  "available": 8, "backed_up": 8, "loaded": 0}
    assert cache.stats().components["full"].evicted["budget"] == 8


def test_a_split_of_a_node_being_backed_up_carries_the_copy_to_both_halves() -> None:
    cache = TierCache(delayed(2), capacity=32, host=HostTier(capacity=32))
    cache.finish(cache.admit(seq(0, 8)))
    lower = node_at(cache, seq(0, 8))
    (record,) = cache.host.records.values()
    lease = cache.admit([*seq(0, 4), *seq(20, 4)])  # its lock splits [0, 8) at 4
    upper = node_at(cache, seq(0, 4))
    assert upper != lower and set(record.nodes) == {lower, upper}
    assert {n: indices for n, (_, indices) in record.nodes.items()} == {
        lower: (0,), upper: (0,)}
    assert set(cache.tree.copying) == {lower, upper}
    assert (locks(cache, upper), locks(cache, lower)) == ([2], [1])
    cache.wait()
    assert nodes(cache) == [(0, 4, seq(0, 4), seq(0, 4)), (4, 8, seq(4, 4), seq(4, 4))]
    assert (locks(cache, upper), locks(cache, lower)) == ([1], [0])
    assert not cache.tree.copying and host_ledger(cache)["backed_up"] == 8
    cache.abort(lease)


def test_a_failed_backup_of_a_split_node_takes_back_both_halves() -> None:
    cache = TierCache(delayed(2), capacity=32, host=HostTier(capacity=32))
    cache.finish(cache.admit(seq(0, 8)))
    (ticket,) = cache.host.records
    lease = cache.admit([*seq(0, 4), *seq(20, 4)])
    cache.engine.fail(ticket)
    cache.wait()
    assert nodes(cache) == [(0, 4, seq(0, 4), None), (4, 8, seq(4, 4), None)]
    assert host_ledger(cache)["available"] == 32 and not cache.tree.copying
    cache.abort(lease)


def test_a_split_of_a_node_being_loaded_back_makes_the_rider_wait_on_both_halves() -> None:
    cache = demoted(polls=2, capacity=16)
    loader = cache.admit(seq(0, 8), load_back=True)
    lower = node_at(cache, seq(0, 8))
    rider = cache.admit([*seq(0, 4), 77])  # its lock splits the node being loaded at 4
    upper = node_at(cache, seq(0, 4))
    (record,) = cache.host.records.values()
    assert set(record.nodes) == {lower, upper}
    assert rider.waiting == loader.waiting == {record.ticket}
    cache.engine.fail(record.ticket)
    assert set(cache.wait(rider)) == {loader, rider}
    assert loader.state is rider.state is LeaseState.FAILED
    assert nodes(cache) == [(0, 4, None, seq(0, 4)), (4, 8, None, seq(4, 4))]
    assert cache.stats().components["full"].pool_available == 16
    again = cache.admit([*seq(0, 4), 77], load_back=True)
    cache.wait(again)
    assert again.ready and cache.match(seq(0, 4)).length == 4
    assert cache.match(seq(0, 8)).host_length == 4


def test_admit_refused_with_only_load_backs_pending_changes_nothing() -> None:
    cache = demoted(polls=3, capacity=8)
    loader = cache.admit(seq(0, 8), load_back=True)
    assert_refused(cache, OutOfSlotsError, lambda: cache.admit(C))
    cache.wait(loader)
    cache.abort(loader)
    assert cache.admit(C).ready


def test_the_ack_of_a_split_load_back_readies_both_halves_and_both_leases() -> None:
    cache = demoted(polls=2, capacity=16)
    loader = cache.admit(seq(0, 8), load_back=True)
    rider = cache.admit([*seq(0, 4), 77])
    assert len(cache.host.records) == 1
    upper, lower = node_at(cache, seq(0, 4)), node_at(cache, seq(0, 8))
    # the copy's and the loader's locks pin both halves, the rider's the upper one
    assert (locks(cache, upper), locks(cache, lower)) == ([3], [2])
    assert set(cache.wait(rider)) == {loader, rider}
    assert loader.ready and rider.ready and not cache.tree.copying
    assert (locks(cache, upper), locks(cache, lower)) == ([2], [1])
    assert nodes(cache) == [(0, 4, seq(8, 4), seq(0, 4)), (4, 8, seq(12, 4), seq(4, 4))]
    assert host_ledger(cache)["loaded"] == 8
