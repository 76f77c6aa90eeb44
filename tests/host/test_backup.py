"""Backups by write policy, and demotion of backed-up nodes, step by step (FULL, page 1).

A backup copies a node's device values to host slots; the host values are placed on the node
when the copy is submitted, and the node stays locked (on every tier) until the copy is
acknowledged. Slot ids follow from the steps: both pools hand out 0, 1, 2... in order."""

from __future__ import annotations

from radixkv.host import HostTier

from ..components.support import locks, seq
from .helpers import TierCache, delayed, host_counters, host_ledger, host_of, node_at, nodes, settle


def _cache(policy: str, polls: int = 1, capacity: int = 16) -> TierCache:
    return TierCache(delayed(polls), capacity=capacity,
                     host=HostTier(capacity=32, write_policy=policy))


def _cached(cache: TierCache, tokens: list[int]) -> int:
    """Admit and finish ``tokens``; the handle of the node they end in."""
    cache.finish(cache.admit(tokens))
    return node_at(cache, tokens)


def test_write_through_backs_a_node_up_at_its_insert_and_unlocks_it_at_the_ack() -> None:
    cache = _cache("write_through")
    node = _cached(cache, seq(0, 4))
    assert nodes(cache) == [(0, 4, [0, 1, 2, 3], [0, 1, 2, 3])]
    assert locks(cache, node) == [1]
    assert host_counters(cache) == {"backup_batches": 1, "load_batches": 0,
                                    "copies_in_flight": 1, "failed_backups": 0,
                                    "failed_loads": 0, "skipped_backups": 0,
                                    "host_hit_tokens": 0, "load_requests": 0}
    assert host_ledger(cache) == {"cached": 4, "evictable": 0, "protected": 4,
                                  "available": 28, "backed_up": 0, "loaded": 0}
    assert cache.stats().components["full"].protected == 4
    assert cache.poll() == []  # delay 1: the first poll only counts down
    assert locks(cache, node) == [1] and host_counters(cache)["copies_in_flight"] == 1
    assert cache.poll() == []
    assert locks(cache, node) == [0]
    assert host_counters(cache)["copies_in_flight"] == 0
    assert host_ledger(cache) == {"cached": 4, "evictable": 4, "protected": 0,
                                  "available": 28, "backed_up": 4, "loaded": 0}
    assert cache.stats().components["full"].protected == 0


def test_write_through_selective_backs_up_at_the_first_reuse_by_match() -> None:
    cache = _cache("write_through_selective")
    node = _cached(cache, seq(0, 4))
    _cached(cache, seq(10, 4))  # never reused: never backed up
    assert host_counters(cache)["backup_batches"] == 0 and not cache.host.due
    found = cache.match(seq(0, 4))  # a hit: the node's second use
    assert found.length == 4 and found.host_length == 0
    assert list(cache.host.due) == [node]  # due; a match starts no copy
    assert host_counters(cache)["backup_batches"] == 0
    assert cache.poll() == []  # the poll's flush submits the due backup
    assert host_counters(cache)["backup_batches"] == 1 and locks(cache, node) == [1]
    assert nodes(cache) == [(0, 4, [0, 1, 2, 3], [0, 1, 2, 3]), (0, 4, [4, 5, 6, 7], None)]
    cache.poll()
    cache.poll()
    assert locks(cache, node) == [0] and host_ledger(cache)["backed_up"] == 4


def test_write_through_selective_backs_up_at_the_first_reuse_by_admit() -> None:
    cache = _cache("write_through_selective")
    node = _cached(cache, seq(0, 4))
    lease = cache.admit([*seq(0, 4), 9])
    assert lease.cached_length == 4 and lease.ready
    assert host_counters(cache)["backup_batches"] == 1  # the admit's flush
    assert host_of(cache, node) == [0, 1, 2, 3]
    assert locks(cache, node) == [2]  # the lease's lock and the copy's
    cache.finish(lease)
    cache.wait()
    assert host_ledger(cache)["backed_up"] == 4


def test_write_back_never_backs_up_at_insert_or_reuse_only_at_eviction() -> None:
    cache = _cache("write_back")
    node = _cached(cache, seq(0, 4))
    for _ in range(3):
        assert cache.match(seq(0, 4)).length == 4
        cache.poll()
    assert host_counters(cache)["backup_batches"] == 0 and host_of(cache, node) is None
    assert cache.evict(full=4) == {"full": 4}
    assert host_counters(cache)["backup_batches"] == 1
    assert nodes(cache) == [(0, 4, None, [0, 1, 2, 3])]  # backed up, then demoted
    assert host_ledger(cache) == {"cached": 4, "evictable": 4, "protected": 0,
                                  "available": 28, "backed_up": 4, "loaded": 0}


def test_a_backup_takes_every_ancestor_the_host_lacks_in_one_batch() -> None:
    cache = _cache("write_back")
    _cached(cache, seq(0, 8))
    _cached(cache, [*seq(0, 4), *seq(20, 4)])  # splits [0, 8) at 4
    assert nodes(cache) == [(0, 4, [0, 1, 2, 3], None), (4, 8, [4, 5, 6, 7], None),
                            (4, 8, [8, 9, 10, 11], None)]
    assert cache.evict(full=4) == {"full": 4}  # the LRU leaf, and its parent with it
    assert nodes(cache) == [(0, 4, [0, 1, 2, 3], [0, 1, 2, 3]),
                            (4, 8, None, [4, 5, 6, 7]),
                            (4, 8, [8, 9, 10, 11], None)]
    assert host_counters(cache)["backup_batches"] == 1
    assert host_ledger(cache)["backed_up"] == 8


def test_a_backup_below_a_backup_in_flight_waits_for_it() -> None:
    cache = _cache("write_through")
    _cached(cache, seq(0, 8))
    leaf = _cached(cache, [*seq(0, 4), *seq(20, 4)])
    # [0, 4) is still being copied: were that copy to fail, a host value of the new leaf
    # would sit below a node without one, so the leaf stays due
    assert nodes(cache) == [(0, 4, [0, 1, 2, 3], [0, 1, 2, 3]),
                            (4, 8, [4, 5, 6, 7], [4, 5, 6, 7]),
                            (4, 8, [8, 9, 10, 11], None)]
    assert list(cache.host.due) == [leaf] and host_counters(cache)["backup_batches"] == 1
    cache.wait()  # the first copy lands; the leaf waits for the next flush
    assert host_of(cache, leaf) is None and list(cache.host.due) == [leaf]
    cache.poll()
    assert host_of(cache, leaf) == [8, 9, 10, 11] and not cache.host.due
    assert host_counters(cache)["backup_batches"] == 2
    cache.wait()
    assert host_ledger(cache)["backed_up"] == 12


def test_demotion_frees_the_device_slots_and_keeps_the_node_host_only() -> None:
    cache = _cache("write_through")
    node = _cached(cache, seq(0, 8))
    cache.wait()
    before = cache.match(seq(0, 8))
    assert (before.length, before.host_length) == (8, 0)
    assert cache.stats().components["full"].pool_available == 8
    assert cache.evict(full=8) == {"full": 8}
    assert nodes(cache) == [(0, 8, None, [0, 1, 2, 3, 4, 5, 6, 7])]
    assert cache.tree.node(node).id == node  # the handle is still live
    after = cache.match(seq(0, 8))
    assert (after.length, after.host_length, after.node) == (0, 8, None)
    stats = cache.stats().components["full"]
    assert (stats.pool_available, stats.cached) == (16, 0)
    assert stats.evicted["budget"] == 8
    assert host_ledger(cache) == {"cached": 8, "evictable": 8, "protected": 0,
                                  "available": 24, "backed_up": 8, "loaded": 0}


def test_demotion_of_a_leaf_leaves_its_parent_on_device() -> None:
    cache = _cache("write_through")
    _cached(cache, seq(0, 8))
    _cached(cache, [*seq(0, 4), *seq(20, 4)])
    settle(cache)
    cache.match(seq(0, 8))  # [4, 8) of the first prompt is the more recent leaf
    assert cache.evict(full=4) == {"full": 4}
    assert nodes(cache) == [(0, 4, [0, 1, 2, 3], [0, 1, 2, 3]),
                            (4, 8, [4, 5, 6, 7], [4, 5, 6, 7]),
                            (4, 8, None, [8, 9, 10, 11])]
    assert cache.stats().components["full"].pool_available == 8
    found = cache.match([*seq(0, 4), *seq(20, 4)])
    assert (found.length, found.host_length) == (4, 4)


def test_a_failed_backup_takes_its_host_values_back_and_a_later_hit_retries() -> None:
    cache = _cache("write_through")
    node = _cached(cache, seq(0, 4))
    (ticket,) = cache.host.records
    cache.engine.fail(ticket)
    cache.wait()
    assert nodes(cache) == [(0, 4, [0, 1, 2, 3], None)]
    assert locks(cache, node) == [0]
    assert host_counters(cache)["failed_backups"] == 1
    assert host_ledger(cache) == {"cached": 0, "evictable": 0, "protected": 0,
                                  "available": 32, "backed_up": 0, "loaded": 0}
    assert cache.match(seq(0, 4)).length == 4  # device values untouched: still a hit
    cache.poll()  # the hit made it due again
    cache.wait()
    assert host_of(cache, node) == [4, 5, 6, 7]  # the first host slots went to the back
    assert host_ledger(cache)["backed_up"] == 4


def test_a_backup_with_no_host_room_is_skipped() -> None:
    cache = TierCache(delayed(0), capacity=16, host=HostTier(capacity=4))
    lease = cache.admit(seq(0, 4))
    other = cache.admit(seq(10, 4))
    cache.finish(lease)
    cache.finish(other)  # the host holds [0, 4), locked by its copy: no room
    assert host_counters(cache)["skipped_backups"] == 1
    assert nodes(cache) == [(0, 4, [0, 1, 2, 3], [0, 1, 2, 3]), (0, 4, [4, 5, 6, 7], None)]
