"""Regression tests: what the host tier tests found, each as it first went wrong.

Every one of these ended in ``InvariantError`` (a value placed below a node that a failed
copy then stripped) or a crash half-way through an admit that leaked a slot."""

from __future__ import annotations

from radixkv.cache import LeaseState
from radixkv.tiers import HostTier

from ..components.support import seq
from .support import TierCache, delayed, host_counters, host_of, node_at, nodes


def _demoted(polls: int, capacity: int = 32, policy: str = "write_through",
             prompts: tuple[list[int], ...] = (seq(0, 8),)) -> TierCache:
    """A cache whose ``prompts`` were cached, backed up and demoted (host-only)."""
    cache = TierCache(delayed(polls), capacity=capacity,
                      host=HostTier(capacity=32, write_policy=policy))
    for tokens in prompts:
        cache.finish(cache.admit(tokens))
        cache.wait()
    cache.evict(full=capacity)
    return cache


def test_an_insert_below_a_failing_load_back_waits_for_it_and_revives_the_prefix() -> None:
    """Was: the insert ran on below [0, 8) while its load-back was in flight (freeing its
    own slots of [0, 8) as duplicates); the load-back then failed, [0, 8) went host-only
    again and the new leaf [8, 12) sat on device below it."""
    cache = _demoted(polls=3)
    lease = cache.admit(seq(0, 8), load_back=True)
    (ticket,) = lease.waiting
    cache.engine.fail(ticket)
    allocation = cache.allocate(12)
    assert allocation is not None
    assert allocation.full.tolist() == seq(16, 12)
    assert cache.insert(seq(0, 12), allocation) == 12  # waits for the load-back first
    assert lease.state is LeaseState.FAILED
    # [0, 8) revived with the inserted slots; the new leaf is backed up (write-through)
    assert nodes(cache) == [(0, 8, seq(16, 8), seq(0, 8)), (8, 12, seq(24, 4), seq(8, 4))]
    assert cache.match(seq(0, 12)).length == 12


def test_a_finish_below_a_load_back_in_flight_waits_for_it() -> None:
    """The same through a lease: its finish runs on below another lease's load-back."""
    cache = _demoted(polls=3, prompts=(seq(0, 4),))
    runner = cache.admit([*seq(0, 4), *seq(40, 4)])  # no load-back: computes all 8
    loader = cache.admit(seq(0, 4), load_back=True)
    cache.engine.fail(min(loader.waiting))
    slots = (runner.slots.tolist(), loader.slots.tolist())
    assert cache.finish(runner) == 8
    assert loader.state is LeaseState.FAILED
    assert slots == (seq(4, 8), seq(12, 4))
    # [0, 4) revived with the runner's slots; [4, 8) new, and backed up (write-through)
    assert nodes(cache) == [(0, 4, seq(4, 4), seq(0, 4)), (4, 8, seq(8, 4), seq(4, 4))]


def test_a_load_back_below_a_load_back_in_flight_waits_for_it() -> None:
    """Was: the second load-back started on [8, 12) while [0, 8) was still loading; the
    first failed, and [8, 12) stayed on device below the host-only [0, 8)."""
    cache = _demoted(polls=2, prompts=(seq(0, 8), seq(0, 12)))
    first = cache.admit(seq(0, 8), load_back=True)
    cache.engine.fail(min(first.waiting))
    second = cache.admit(seq(0, 12), load_back=True)  # waits for the first to land
    assert first.state is LeaseState.FAILED
    assert second.cached_length == 12 and len(second.waiting) == 1
    assert host_counters(cache)["load_batches"] == 2
    cache.wait(second)
    assert second.ready and cache.match(seq(0, 12)).length == 12


def test_a_failed_backup_of_an_ancestor_leaves_no_host_value_below_it() -> None:
    """Was: the new leaf's backup started while its parent's was in flight; the parent's
    failed, and the leaf's host value sat below a node without one."""
    cache = TierCache(delayed(2), capacity=32, host=HostTier(capacity=32))
    cache.finish(cache.admit(seq(0, 4)))
    (ticket,) = cache.host.records
    cache.engine.fail(ticket)
    cache.finish(cache.admit(seq(0, 8)))
    leaf = node_at(cache, seq(0, 8))
    assert host_of(cache, leaf) is None and list(cache.host.due) == [leaf]
    cache.wait()  # the parent's copy fails; the leaf's backup takes the parent along
    assert nodes(cache) == [(0, 4, seq(0, 4), seq(4, 4)), (4, 8, seq(4, 4), seq(8, 4))]
    assert host_counters(cache)["failed_backups"] == 1


def test_a_load_back_failing_during_an_admits_eviction_is_applied_after_the_admit() -> None:
    """Was: the admit's write-back eviction waited for a backup, the engine reported the
    failed load-back of the admit's own prefix meanwhile, its device values were taken back
    and the admit crashed reading them (InvalidSlotsError), leaking a slot."""
    cache = _demoted(polls=3, capacity=16, policy="write_back")
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
