"""Regression tests: cases these tests found breaking the first host tier (1603cc0), each
ending in ``InvariantError`` (a value placed below a node that a failed copy then stripped)
or in an admit crashing half-way with a slot leaked. Main fixed them meanwhile (inserts and
load-backs stop at a node still loading, backups wait for one in flight above them, waits
inside eviction defer load-back acknowledgements, host eviction spares the ancestors a
backup relies on); these pin the fixed behaviour, step by step."""

from __future__ import annotations

from radixkv.cache import LeaseState
from radixkv.host import HostTier

from ..components.support import seq
from .helpers import TierCache, delayed, demoted, host_counters, host_of, node_at, nodes, settle


def test_an_insert_below_a_failing_load_back_caches_nothing_below_it() -> None:
    """Was: the insert ran on below [0, 8) while its load-back was in flight; the copy
    failed, [0, 8) went host-only again and the new leaf [8, 12) sat on device below it.
    Now the insert stops at the node still loading (its slots all go back)."""
    cache = demoted(polls=3)
    lease = cache.admit(seq(0, 8), load_back=True)
    (ticket,) = lease.waiting
    cache.engine.fail(ticket)
    allocation = cache.allocate(12)
    assert allocation is not None and allocation.full.tolist() == seq(16, 12)
    assert cache.insert(seq(0, 12), allocation) == 0
    assert nodes(cache) == [(0, 8, seq(8, 8), seq(0, 8))]  # still loading, nothing below
    assert cache.stats().components["full"].pool_available == 24
    assert cache.wait(lease) == [lease] and lease.state is LeaseState.FAILED
    assert nodes(cache) == [(0, 8, None, seq(0, 8))]
    again = cache.allocate(12)
    assert again is not None
    assert cache.insert(seq(0, 12), again) == 12  # now it revives [0, 8) with its slots
    assert nodes(cache)[0][2] == again.full.tolist()[:8]


def test_a_finish_below_a_load_back_in_flight_caches_nothing_below_it() -> None:
    """The same through a lease: its finish stops at another lease's load-back."""
    cache = demoted(polls=3, prompts=(seq(0, 4),))
    runner = cache.admit([*seq(0, 4), *seq(40, 4)])  # no load-back: computes all 8
    loader = cache.admit(seq(0, 4), load_back=True)
    cache.engine.fail(min(loader.waiting))
    assert (runner.slots.tolist(), loader.slots.tolist()) == (seq(4, 8), seq(12, 4))
    assert cache.finish(runner) == 0
    assert cache.stats().components["full"].pool_available == 28
    assert cache.wait(loader) == [loader] and loader.state is LeaseState.FAILED
    assert nodes(cache) == [(0, 4, None, seq(0, 4))]


def test_no_load_back_runs_below_a_load_back_in_flight() -> None:
    """Was: the second load-back started on [8, 12) while [0, 8) was still loading; the
    first failed, and [8, 12) stayed on device below the host-only [0, 8). Now the second
    admit rides the first copy (no load-back of its own) and fails with it."""
    cache = demoted(polls=2, prompts=(seq(0, 8), seq(0, 12)))
    first = cache.admit(seq(0, 8), load_back=True)
    cache.engine.fail(min(first.waiting))
    second = cache.admit(seq(0, 12), load_back=True)
    assert second.cached_length == 8 and second.waiting == first.waiting
    assert host_counters(cache)["load_batches"] == 1
    assert nodes(cache) == [(0, 8, seq(12, 8), seq(0, 8)), (8, 12, None, seq(8, 4))]
    assert cache.wait(second) == [first, second]
    assert first.state is second.state is LeaseState.FAILED
    assert nodes(cache) == [(0, 8, None, seq(0, 8)), (8, 12, None, seq(8, 4))]
    again = cache.admit(seq(0, 12), load_back=True)
    cache.wait(again)
    assert again.ready and again.cached_length == 12
    assert host_counters(cache)["load_batches"] == 2


def test_a_failed_backup_of_an_ancestor_leaves_no_host_value_below_it() -> None:
    """Was: the new leaf's backup started while its parent's was in flight; the parent's
    failed, and the leaf's host value sat below a node without one. Now the leaf stays due
    and its backup, after the parent's failure, takes the parent along."""
    cache = TierCache(delayed(2), capacity=32, host=HostTier(capacity=32))
    cache.finish(cache.admit(seq(0, 4)))
    (ticket,) = cache.host.records
    cache.engine.fail(ticket)
    cache.finish(cache.admit(seq(0, 8)))
    leaf = node_at(cache, seq(0, 8))
    assert host_of(cache, leaf) is None and list(cache.host.due) == [leaf]
    cache.wait()  # the parent's copy fails
    assert nodes(cache) == [(0, 4, seq(0, 4), None), (4, 8, seq(4, 4), None)]
    cache.poll()  # the flush backs the leaf up, and the parent with it
    assert nodes(cache) == [(0, 4, seq(0, 4), seq(4, 4)), (4, 8, seq(4, 4), seq(8, 4))]
    settle(cache)
    assert host_counters(cache)["failed_backups"] == 1
    assert host_counters(cache)["backup_batches"] == 2


def test_a_load_back_failing_during_an_admits_eviction_is_applied_after_the_admit() -> None:
    """Was: the admit's write-back eviction waited for a backup, the engine reported the
    failed load-back of the admit's own prefix meanwhile, its device values were taken back
    and the admit crashed reading them (InvalidSlotsError), leaking a slot."""
    cache = demoted(polls=3, capacity=16, policy="write_back")
    cache.finish(cache.admit(seq(100, 4)))  # device-only: eviction must back it up
    loader = cache.admit(seq(0, 8), load_back=True)
    cache.engine.fail(min(loader.waiting))
    lease = cache.admit([*seq(0, 8), *seq(50, 8)])  # evicts [100, 104): waits for its backup
    assert lease.cached_length == 8 and lease.waiting == loader.waiting
    assert loader.state is LeaseState.ACTIVE  # the failure is applied by the next poll
    assert set(cache.poll()) == {loader, lease}
    assert loader.state is lease.state is LeaseState.FAILED
    assert cache.match(seq(0, 8)).host_length == 8
    assert cache.match(seq(100, 4)).host_length == 4  # backed up, then demoted
    assert cache.stats().components["full"].pool_available == 16


def test_host_eviction_for_a_backup_spares_the_ancestors_the_backup_relies_on() -> None:
    """Was: a backup of [2 | 0, 0] planned without its parent [2] (which had a host copy),
    then made host room by evicting that very copy (the oldest host leaf): the new host
    value sat below a node without one. The plan's nodes are now locked before the host
    eviction (a lock pins the path), so it takes another host leaf."""
    cache = TierCache(delayed(0), capacity=12, policy="fifo", components=("full", "swa"),
                      sliding_window=3, host=HostTier(capacity=4, write_policy="write_back"))
    for tokens, more in (([2], []), ([], [0, 0]), ([2], [0, 0])):
        lease = cache.admit(tokens)
        if more:
            cache.extend(lease, more)
        cache.finish(lease)
    assert nodes(cache) == [(0, 1, [0], None), (0, 2, [1, 2], None), (1, 3, [3, 4], None)]
    # fifo: [2], then [0, 0], then [2 | 0, 0] are backed up and tombstoned; the last
    # backup needs 2 host slots with 1 free: the host copy of [0, 0] goes
    assert cache.evict(swa=4) == {"full": 0, "swa": 5}
    assert nodes(cache) == [(0, 1, [0], [0]), (0, 2, [1, 2], None), (1, 3, [3, 4], [3, 1])]
    assert cache.stats().host.components["full"].evicted["budget"] == 2
