"""Step-by-step scenarios through PrefixCache with exact slot ids, lock counts and ledgers.

A fresh pool hands out slots 0, 1, 2... in ascending order and reuses freed pages FIFO, so
every slot id below is determined by the steps before it. Every call that may mutate the
cache is followed by ``check_invariants()`` (through :class:`AuditedCache`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from radixkv import AllBlocksCleared, BlockRemoved, LeaseState
from radixkv.errors import LeaseError, LockError, OutOfSlotsError, StaleHandleError

from ..audited import AuditedCache


def seq(start: int, count: int) -> list[int]:
    return list(range(start, start + count))


def locks(cache: AuditedCache, node_id: Any) -> list[int]:
    return list(cache.tree.node(node_id).locks)


def full_stats(cache: AuditedCache) -> tuple[int, int, int]:
    """(cached, evictable, protected) of the FULL component."""
    full = cache.stats().components["full"]
    return full.cached, full.evictable, full.protected


def insert(cache: AuditedCache, tokens: list[int], namespace: object = None, **kw: Any) -> Any:
    """Admit and finish one request; return the node id its prompt now ends on."""
    lease = cache.admit(tokens, namespace, **kw)
    cache.finish(lease)
    return cache.match(tokens, namespace).node


# ---------------------------------------------------------------------- one request


def test_admit_then_finish_of_one_request_caches_its_tokens_with_its_slots() -> None:
    cache = AuditedCache(capacity=16)
    prompt = [11, 12, 13, 14, 15]
    lease = cache.admit(prompt)
    assert lease.slots.tolist() == [0, 1, 2, 3, 4]
    assert (lease.cached_length, lease.tree_owned, lease.lock) == (0, 0, None)
    assert lease.state is LeaseState.ACTIVE
    stats = cache.stats()
    assert (stats.available, stats.held_by_requests, stats.active_leases) == (11, 5, 1)
    assert (stats.matches, stats.match_tokens, stats.hit_tokens, stats.admitted) == (1, 5, 0, 1)
    assert stats.nodes == 0
    assert full_stats(cache) == (0, 0, 0)

    assert cache.finish(lease) == 5
    assert lease.state is LeaseState.FINISHED
    stats = cache.stats()
    assert (stats.available, stats.held_by_requests, stats.active_leases) == (11, 0, 0)
    assert (stats.finished, stats.inserted_tokens, stats.nodes) == (1, 5, 1)
    assert full_stats(cache) == (5, 5, 0)

    found = cache.match(prompt)
    assert found.length == 5
    assert found.slots.tolist() == [0, 1, 2, 3, 4]
    assert locks(cache, found.node) == [0]
    part = cache.match([11, 12, 13, 99])
    assert (part.length, part.slots.tolist(), part.node) == (3, [0, 1, 2], found.node)
    assert cache.stats().hit_tokens == 8

    with pytest.raises(LeaseError):
        cache.finish(lease)


def test_a_match_on_an_empty_cache_finds_nothing() -> None:
    cache = AuditedCache(capacity=8)
    found = cache.match([1, 2, 3])
    assert (found.length, found.slots.tolist(), found.node) == (0, [], None)


# ---------------------------------------------------------------------- sharing


def test_a_second_request_borrows_the_trees_slots_for_the_shared_prefix() -> None:
    cache = AuditedCache(capacity=16)
    x = insert(cache, [1, 2, 3, 4])

    b = cache.admit([1, 2, 3, 4, 5, 6])
    assert b.cached_length == b.tree_owned == 4
    assert b.slots.tolist() == [0, 1, 2, 3, 4, 5]
    assert b.own_slots.tolist() == [4, 5]
    assert b.lock is not None and b.lock.node_id == x
    assert locks(cache, x) == [1]
    assert full_stats(cache) == (4, 0, 4)
    assert (cache.stats().available, cache.stats().held_by_requests) == (10, 2)

    assert cache.finish(b) == 6
    assert locks(cache, x) == [0]
    assert cache.stats().available == 10
    assert full_stats(cache) == (6, 6, 0)
    found = cache.match([1, 2, 3, 4, 5, 6, 7])
    assert (found.length, found.slots.tolist()) == (6, [0, 1, 2, 3, 4, 5])
    assert cache.stats().nodes == 2


def test_duplicate_slots_of_a_concurrent_identical_request_are_freed_fifo() -> None:
    cache = AuditedCache(capacity=16)
    insert(cache, [1, 2, 3, 4, 5, 6])  # slots 0..5
    c = cache.admit([7, 8, 9, 10])
    d = cache.admit([7, 8, 9, 10])
    assert c.slots.tolist() == [6, 7, 8, 9]
    assert d.slots.tolist() == [10, 11, 12, 13]
    assert cache.stats().available == 2

    assert cache.finish(c) == 4
    assert cache.finish(d) == 4
    assert cache.stats().available == 6  # d's four slots came back
    assert cache.match([7, 8, 9, 10]).slots.tolist() == [6, 7, 8, 9]
    assert cache.stats().inserted_tokens == 10

    # free queue: 14, 15 (never used) then 10..13 (freed by d)
    e = cache.admit(seq(20, 6))
    assert e.slots.tolist() == [14, 15, 10, 11, 12, 13]
    assert cache.stats().available == 0


def test_a_request_borrowing_part_of_a_concurrent_insert_frees_only_the_duplicates() -> None:
    cache = AuditedCache(capacity=16)
    insert(cache, [1, 2])  # slots 0, 1
    a = cache.admit([1, 2, 3, 4, 5])  # borrows 0, 1; owns 2, 3, 4
    b = cache.admit([1, 2, 3, 4, 6])  # borrows 0, 1; owns 5, 6, 7
    assert a.slots.tolist() == [0, 1, 2, 3, 4]
    assert b.slots.tolist() == [0, 1, 5, 6, 7]
    cache.finish(a)
    cache.finish(b)  # [3, 4] duplicates a's slots 2, 3 → 5, 6 freed; 7 becomes a leaf
    assert cache.match([1, 2, 3, 4, 6]).slots.tolist() == [0, 1, 2, 3, 7]
    assert cache.match([1, 2, 3, 4, 5]).slots.tolist() == [0, 1, 2, 3, 4]
    assert cache.stats().available == 16 - 8 + 2
    assert full_stats(cache) == (6, 6, 0)
    assert cache.admit(seq(50, 10)).slots.tolist()[-2:] == [5, 6]


@pytest.mark.parametrize("page", [1, 4, 16, 64])
def test_sharing_a_prefix_borrows_whole_pages_at_every_page_size(page: int) -> None:
    cache = AuditedCache(capacity=8 * page, page_size=page)
    first = seq(1000, 2 * page)
    node = insert(cache, first)
    assert cache.match(first).slots.tolist() == seq(0, 2 * page)

    # shares one page and a half: only the first whole page can be borrowed
    second = first[: page + page // 2] + seq(5000, page)
    lease = cache.admit(second)
    assert lease.cached_length == page
    assert lease.slots.tolist()[:page] == seq(0, page)
    assert lease.own_slots.tolist() == seq(2 * page, len(second) - page + (-len(second)) % page)
    assert lease.lock is not None and locks(cache, lease.lock.node_id) == [1]
    assert locks(cache, node) == [0]  # the lock split the node: its lower half is evictable
    before = cache.stats().available
    cached = cache.finish(lease)
    assert cached == len(second) - len(second) % page
    assert cache.match(second).length == cached
    assert cache.match(second).slots.tolist()[:page] == seq(0, page)
    assert locks(cache, node) == [0]
    assert cache.stats().available == before + len(second) % page + (-len(second)) % page


# ---------------------------------------------------------------------- splitting


def test_insert_splits_at_a_page_boundary_keeping_locks_and_the_lower_handle() -> None:
    cache = AuditedCache(capacity=64, page_size=4)
    a = seq(100, 8)
    x = insert(cache, a)
    assert cache.stats().nodes == 1

    holder = cache.admit([*a, 200])  # locks the whole 8-token node
    assert holder.slots.tolist() == [*seq(0, 8), 8]
    assert locks(cache, x) == [1]

    b = cache.admit([*a[:4], 300, 301, 302, 303])  # mid-edge: the lock splits the edge
    assert b.cached_length == 4
    assert b.lock is not None and b.lock.node_id == cache.tree.node(x).parent.id
    assert b.slots.tolist() == [0, 1, 2, 3, 12, 13, 14, 15]
    assert (locks(cache, b.lock.node_id), locks(cache, x)) == ([2], [1])
    assert cache.stats().nodes == 2

    assert cache.tree.node(x).hits == 3  # the match in insert(), holder's and b's admissions
    assert cache.finish(b) == 8  # its tokens go below the split it made
    assert cache.stats().nodes == 3
    lower = cache.tree.node(x)  # the old handle is the lower half now
    upper = lower.parent
    assert upper is not None and upper.parent is not None
    assert upper.id > x
    assert (upper.start, upper.length, upper.values[0].tolist()) == (0, 4, [0, 1, 2, 3])
    assert (lower.start, lower.length, lower.values[0].tolist()) == (4, 4, [4, 5, 6, 7])
    # both halves keep the origin's bookkeeping (the insert is an access, not a hit)
    assert (upper.created, upper.hits) == (lower.created, lower.hits) == (1, 3)
    assert upper.last_access == lower.last_access + 1
    assert locks(cache, upper.id) == [1]  # holder's lock covers both halves
    assert locks(cache, x) == [1]
    leaf = cache.match([*a[:4], 300, 301, 302, 303])
    assert leaf.slots.tolist() == [0, 1, 2, 3, 12, 13, 14, 15]
    assert locks(cache, leaf.node) == [0]
    assert cache.tree.node(leaf.node).parent is upper
    assert cache.match(a).node == x
    assert cache.stats().available == 48
    assert full_stats(cache) == (12, 4, 8)

    assert cache.finish(holder) == 8
    assert locks(cache, x) == [0]
    assert locks(cache, upper.id) == [0]
    assert cache.stats().available == 52
    assert full_stats(cache) == (12, 12, 0)


def test_an_insert_ending_inside_an_edge_splits_there() -> None:
    cache = AuditedCache(capacity=32, page_size=4)
    short = cache.admit(seq(0, 8))  # slots 0..7, nothing cached yet
    long = cache.admit(seq(0, 12))  # slots 8..19
    cache.finish(long)
    x = cache.match(seq(0, 12)).node
    assert cache.stats().nodes == 1

    assert cache.finish(short) == 8  # its key ends inside x's edge
    assert cache.stats().nodes == 2
    assert cache.stats().available == 32 - 12  # short's 0..7 were duplicates
    upper = cache.match(seq(0, 8))
    assert upper.node != x
    assert upper.slots.tolist() == seq(8, 8)
    assert cache.tree.node(x).parent is cache.tree.node(upper.node)
    assert (cache.tree.node(x).start, cache.tree.node(x).length) == (8, 4)
    assert cache.match(seq(0, 12)).node == x


def test_a_fully_borrowed_request_inserts_nothing() -> None:
    cache = AuditedCache(capacity=32, page_size=4)
    x = insert(cache, seq(0, 12))
    lease = cache.admit(seq(0, 8))
    assert lease.cached_length == 8
    assert cache.stats().nodes == 2  # its lock ends at 8: [0, 8) [8, 12)
    assert cache.finish(lease) == 8
    assert cache.stats().nodes == 2
    early = cache.admit([*seq(0, 4), 77, 78])  # the partial page is never cached
    assert cache.finish(early) == 4
    assert cache.stats().nodes == 3  # split at 4 by its lock, nothing inserted
    assert cache.tree.node(x).start == 8  # the handle stays with the lowest part
    assert cache.stats().inserted_tokens == 12


def test_match_in_the_middle_of_an_edge_does_not_split() -> None:
    cache = AuditedCache(capacity=64, page_size=4)
    a = seq(100, 12)
    x = insert(cache, a)
    snapshot_nodes = sorted(cache.tree.node_ids())

    found = cache.match([*a[:4], 9, 9, 9, 9])
    assert (found.length, found.slots.tolist(), found.node) == (4, [0, 1, 2, 3], x)
    found = cache.match(a[:10])  # a page and a half of the second page: cut to whole pages
    assert (found.length, found.slots.tolist(), found.node) == (8, seq(0, 8), x)
    found = cache.match(a[:3])
    assert (found.length, found.node) == (0, None)
    assert cache.stats().nodes == 1
    assert sorted(cache.tree.node_ids()) == snapshot_nodes
    assert cache.tree.node(x).length == 12


def test_match_in_the_middle_of_an_edge_returns_the_exact_length_with_page_one() -> None:
    cache = AuditedCache(capacity=16)
    x = insert(cache, [5, 6, 7, 8, 9, 10])
    found = cache.match([5, 6, 7, 42, 9])
    assert (found.length, found.slots.tolist(), found.node) == (3, [0, 1, 2], x)
    assert cache.stats().nodes == 1


def test_a_match_result_read_after_a_split_and_an_eviction_keeps_the_slots_it_found() -> None:
    cache = AuditedCache(capacity=16)
    insert(cache, [1, 2, 3, 4, 5, 6])
    found = cache.match([1, 2, 3, 4, 5, 6])  # slots are concatenated only when read
    insert(cache, [1, 2, 3, 9, 9])  # splits the matched node after 3 tokens
    assert cache.evict(full=6) == {"full": 8}  # both leaves, then their parent
    assert cache.stats().nodes == 0
    assert (found.length, found.slots.tolist()) == (6, [0, 1, 2, 3, 4, 5])


# ---------------------------------------------------------------------- tails, extend, commit


@pytest.mark.parametrize("page", [4, 16, 64])
def test_the_partial_tail_page_is_freed_at_finish(page: int) -> None:
    cache = AuditedCache(capacity=8 * page, page_size=page)
    prompt = seq(1, page + page // 2)
    lease = cache.admit(prompt)
    assert lease.slots.tolist() == seq(0, len(prompt))
    assert lease.allocated_slots.tolist() == seq(0, 2 * page)
    assert cache.stats().available == 6 * page

    assert cache.finish(lease) == page
    assert cache.stats().available == 7 * page
    assert full_stats(cache) == (page, page, 0)
    assert cache.match(prompt).length == page

    # page 1 went to the back of the free queue: pages 2..7 come first, then page 1
    nxt = cache.admit(seq(10_000, 2 * page))
    assert nxt.slots.tolist() == seq(2 * page, 2 * page)
    rest = cache.admit(seq(20_000, 5 * page))
    assert rest.slots.tolist() == seq(4 * page, 4 * page) + seq(page, page)
    assert cache.stats().available == 0


def test_extend_allocates_a_page_only_when_the_last_page_is_full() -> None:
    cache = AuditedCache(capacity=64, page_size=4)
    lease = cache.admit(seq(0, 6))
    assert lease.allocated_slots.tolist() == seq(0, 8)
    assert cache.stats().available == 56

    assert cache.extend(lease, [100]).tolist() == [6]
    assert cache.stats().available == 56
    assert cache.extend(lease, [101]).tolist() == [7]
    assert cache.stats().available == 56
    assert cache.extend(lease, []).tolist() == []
    assert cache.stats().available == 56
    assert cache.extend(lease, [102]).tolist() == [8]
    assert cache.stats().available == 52
    assert cache.extend(lease, seq(103, 5)).tolist() == [9, 10, 11, 12, 13]
    assert cache.stats().available == 48
    assert lease.num_tokens == 14
    assert lease.slots.tolist() == seq(0, 14)
    assert cache.stats().held_by_requests == 16

    assert cache.finish(lease) == 12
    assert cache.stats().available == 52
    assert cache.match([*seq(0, 6), *seq(100, 8)]).slots.tolist() == seq(0, 12)


def test_extend_with_page_one_allocates_one_slot_per_token() -> None:
    cache = AuditedCache(capacity=8)
    lease = cache.admit([1, 2])
    assert cache.extend(lease, [3]).tolist() == [2]
    assert cache.extend(lease, [4, 5]).tolist() == [3, 4]
    assert cache.stats().available == 3
    assert cache.finish(lease) == 5
    assert cache.match([1, 2, 3, 4, 5]).slots.tolist() == [0, 1, 2, 3, 4]


def test_chunked_prefill_commit_moves_the_lock_and_rewrites_slots_to_the_trees() -> None:
    cache = AuditedCache(capacity=64, page_size=4)
    prompt = seq(500, 12)
    a = cache.admit(prompt)
    b = cache.admit(prompt)
    assert a.slots.tolist() == seq(0, 12)
    assert b.slots.tolist() == seq(12, 12)
    assert cache.stats().available == 40

    assert cache.commit(a, 8) == 8
    assert a.lock is not None
    n1 = a.lock.node_id
    assert cache.match(prompt).node == n1
    assert locks(cache, n1) == [1]
    assert (a.tree_owned, a.slots.tolist(), a.own_slots.tolist()) == (8, seq(0, 12), seq(8, 4))
    assert cache.stats().available == 40

    assert cache.commit(b, 8) == 8  # b's 12..19 duplicate a's pages and are freed
    assert b.lock is not None and b.lock.node_id == n1
    assert locks(cache, n1) == [2]
    assert b.slots.tolist() == [*seq(0, 8), 20, 21, 22, 23]
    assert b.own_slots.tolist() == [20, 21, 22, 23]
    assert cache.stats().available == 48

    assert cache.commit(a) == 12
    n2 = a.lock.node_id
    assert n2 != n1
    assert cache.tree.node(n2).parent is cache.tree.node(n1)
    assert locks(cache, n1) == [2]
    assert locks(cache, n2) == [1]
    assert a.own_slots.tolist() == []
    assert full_stats(cache) == (12, 0, 12)

    assert cache.commit(b) == 12  # 20..23 duplicate a's last page
    assert b.lock.node_id == n2
    assert b.slots.tolist() == seq(0, 12)
    assert locks(cache, n1) == [2]
    assert locks(cache, n2) == [2]
    assert cache.stats().available == 52
    assert cache.stats().held_by_requests == 0

    assert cache.commit(b, 5) == 12  # committing less than is held changes nothing
    assert locks(cache, n2) == [2]

    # free queue: pages 6..15, then 3, 4 (b's first commit), then 5 (b's second)
    assert cache.extend(a, [900]).tolist() == [24]
    assert cache.finish(b) == 12
    assert locks(cache, n2) == [1]
    assert cache.finish(a) == 12
    assert locks(cache, n1) == [0]
    assert locks(cache, n2) == [0]
    assert cache.stats().available == 52
    assert full_stats(cache) == (12, 12, 0)


def test_commit_of_a_borrowed_prefix_extends_the_lock_downwards() -> None:
    cache = AuditedCache(capacity=32)
    root_node = insert(cache, [1, 2, 3])
    lease = cache.admit([1, 2, 3, 4, 5, 6])
    assert locks(cache, root_node) == [1]
    assert cache.commit(lease, 5) == 5
    assert lease.lock is not None
    tail = lease.lock.node_id
    assert tail != root_node
    assert locks(cache, root_node) == [1]
    assert locks(cache, tail) == [1]
    assert cache.match([1, 2, 3, 4, 5]).slots.tolist() == [0, 1, 2, 3, 4]
    assert lease.own_slots.tolist() == [5]
    cache.finish(lease)
    assert locks(cache, root_node) == [0]
    assert cache.match([1, 2, 3, 4, 5, 6]).slots.tolist() == [0, 1, 2, 3, 4, 5]


# ---------------------------------------------------------------------- abort


def test_abort_frees_only_the_leases_own_slots() -> None:
    cache = AuditedCache(capacity=16)
    x = insert(cache, [1, 2, 3, 4])
    lease = cache.admit([1, 2, 3, 4, 5, 6])
    assert cache.extend(lease, [7]).tolist() == [6]
    assert lease.own_slots.tolist() == [4, 5, 6]
    assert locks(cache, x) == [1]
    assert cache.stats().available == 9

    cache.abort(lease)
    assert lease.state is LeaseState.ABORTED
    assert cache.stats().aborted == 1
    assert cache.stats().available == 12
    assert locks(cache, x) == [0]
    assert full_stats(cache) == (4, 4, 0)
    found = cache.match([1, 2, 3, 4, 5, 6, 7])
    assert (found.length, found.slots.tolist()) == (4, [0, 1, 2, 3])
    with pytest.raises(LeaseError):
        cache.abort(lease)
    # the aborted slots 4, 5, 6 are reused after the never-used 7..15
    assert cache.admit(seq(40, 12)).slots.tolist() == [*seq(7, 9), 4, 5, 6]


def test_abort_after_commit_keeps_what_was_committed() -> None:
    cache = AuditedCache(capacity=16, page_size=4)
    lease = cache.admit(seq(0, 10))
    cache.commit(lease, 8)
    cache.abort(lease)
    assert cache.stats().available == 8
    assert cache.match(seq(0, 10)).slots.tolist() == seq(0, 8)
    assert full_stats(cache) == (8, 8, 0)


# ---------------------------------------------------------------------- eviction


def test_overlapping_locks_count_shared_ancestors_and_protect_each_token_once() -> None:
    cache = AuditedCache(capacity=32)
    a = insert(cache, seq(1, 8))
    b = insert(cache, [*seq(1, 4), *seq(90, 4)])  # splits a after 4 tokens
    top = cache.tree.node(a).parent.id
    deep = cache.lock(a)
    assert (locks(cache, a), locks(cache, top), full_stats(cache)) == ([1], [1], (12, 4, 8))
    shallow = cache.lock(top)  # already locked: nothing newly protected
    assert (locks(cache, a), locks(cache, top), full_stats(cache)) == ([1], [2], (12, 4, 8))
    sibling = cache.lock(b)
    assert (locks(cache, b), locks(cache, top), full_stats(cache)) == ([1], [3], (12, 0, 12))
    cache.unlock(deep)  # a's own tokens go, the shared prefix stays
    assert (locks(cache, a), locks(cache, top), full_stats(cache)) == ([0], [2], (12, 4, 8))
    cache.unlock(sibling)
    assert (locks(cache, b), locks(cache, top), full_stats(cache)) == ([0], [1], (12, 8, 4))
    cache.unlock(shallow)
    assert (locks(cache, top), full_stats(cache)) == ([0], (12, 12, 0))


def test_locked_prefixes_are_never_evicted_and_become_evictable_after_finish() -> None:
    cache = AuditedCache(capacity=12)
    a = insert(cache, [1, 2, 3, 4])
    insert(cache, [5, 6, 7, 8])
    holder = cache.admit([1, 2, 3, 4])
    assert holder.slots.tolist() == [0, 1, 2, 3]
    assert locks(cache, a) == [1]
    assert full_stats(cache) == (8, 4, 4)

    assert cache.evict(100)["full"] == 4
    assert cache.match([5, 6, 7, 8]).length == 0
    assert cache.match([1, 2, 3, 4]).length == 4
    assert full_stats(cache) == (4, 0, 4)
    assert cache.evict(100)["full"] == 0
    assert cache.tree.node(a).values[0].tolist() == [0, 1, 2, 3]

    with pytest.raises(OutOfSlotsError):
        cache.admit(seq(20, 10))

    cache.finish(holder)
    assert full_stats(cache) == (4, 4, 0)
    big = cache.admit(seq(20, 10))  # evicts [1,2,3,4] to make room
    assert big.slots.tolist() == [8, 9, 10, 11, 4, 5, 6, 7, 0, 1]
    assert cache.match([1, 2, 3, 4]).length == 0
    with pytest.raises(StaleHandleError):
        cache.tree.node(a)
    assert cache.stats().evicted_tokens == 8


def test_a_parent_becomes_evictable_once_its_last_child_is_gone() -> None:
    cache = AuditedCache(capacity=32, events=True)
    insert(cache, [1, 2, 3, 4])
    insert(cache, [1, 2, 5, 6])  # splits: [1,2] with children [3,4] and [5,6]
    insert(cache, [9, 9])
    shared = cache.match([1, 2]).node
    cache.take_events()
    assert cache.evict(1)["full"] == 2  # [3,4]: least recently used leaf
    assert cache.match([1, 2, 3, 4]).length == 2
    assert cache.match([9, 9]).length == 2  # refresh [9,9] so [5,6] is older
    assert cache.evict(1)["full"] == 2  # [5,6]
    assert cache.evict(1)["full"] == 2  # now [1,2] is a leaf, older than [9,9]
    with pytest.raises(StaleHandleError):
        cache.tree.node(shared)
    assert cache.match([9, 9]).length == 2
    removed = [e for e in cache.take_events() if isinstance(e, BlockRemoved)]
    assert len(removed) == 3


def test_an_admit_that_cannot_fit_raises_and_changes_nothing() -> None:
    cache = AuditedCache(capacity=8)
    insert(cache, [1, 2, 3, 4])  # 4 evictable slots 0..3
    running = cache.admit([7, 7, 7, 7])  # holds 4..7
    before = cache.snapshot()
    stats_before = cache.stats()
    # 5 fresh tokens: nothing free and the only evictable entry is the one it would borrow
    with pytest.raises(OutOfSlotsError):
        cache.admit([1, 2, 3, 4, 9, 9, 9, 9, 9])
    with pytest.raises(OutOfSlotsError):
        cache.admit(seq(50, 9))
    with pytest.raises(OutOfSlotsError):
        cache.extend(running, seq(60, 5))
    assert cache.snapshot() == before
    assert cache.stats() == stats_before

    # and the cache keeps working
    assert cache.extend(running, [8]).tolist() == [0]  # evicted [1,2,3,4] to make room
    assert cache.match([1, 2, 3, 4]).length == 0
    assert cache.finish(running) == 5
    assert cache.match([7, 7, 7, 7, 8]).slots.tolist() == [4, 5, 6, 7, 0]


def test_an_admit_that_fits_only_by_evicting_evicts_in_policy_order() -> None:
    cache = AuditedCache(capacity=8, page_size=2)
    insert(cache, [1, 1])  # slots 0, 1
    insert(cache, [2, 2])  # slots 2, 3
    insert(cache, [3, 3])  # slots 4, 5
    cache.match([1, 1])  # [2,2] is now least recently used, then [3,3]
    lease = cache.admit(seq(10, 4))  # 2 free (6, 7), needs one more page
    assert lease.slots.tolist() == [6, 7, 2, 3]
    assert cache.match([2, 2]).length == 0
    assert cache.match([3, 3]).length == 2
    assert cache.match([1, 1]).length == 2


# ---------------------------------------------------------------------- namespaces, bigrams


def test_namespaces_never_share_prefixes() -> None:
    cache = AuditedCache(capacity=32)
    tokens = [1, 2, 3, 4]
    home = ("lora", "tenant-1")
    insert(cache, tokens, home)
    assert cache.match(tokens, home).length == 4
    for other in [None, ("lora", "tenant-2"), ("lora-2", "tenant-1"), ("lora", None),
                  (None, "tenant-1")]:
        assert cache.match(tokens, other).length == 0

    lease = cache.admit(tokens, ("lora", "tenant-2"))
    assert lease.cached_length == 0
    assert lease.slots.tolist() == [4, 5, 6, 7]
    cache.finish(lease)
    assert cache.match(tokens, ("lora", "tenant-2")).slots.tolist() == [4, 5, 6, 7]
    assert cache.match(tokens, home).slots.tolist() == [0, 1, 2, 3]
    assert cache.stats().nodes == 2
    assert full_stats(cache) == (8, 8, 0)


def test_int_and_str_namespace_parts_are_different_namespaces() -> None:
    cache = AuditedCache(capacity=16)
    insert(cache, [1, 2], (1, None))
    assert cache.match([1, 2], ("1", None)).length == 0
    assert cache.match([1, 2], (1, None)).length == 2


def test_bigram_keys_cache_n_of_n_plus_one_tokens() -> None:
    cache = AuditedCache(capacity=32, bigram=True)
    lease = cache.admit([1, 2, 3, 4, 5])
    assert lease.slots.tolist() == [0, 1, 2, 3, 4]
    assert cache.finish(lease) == 4
    assert cache.stats().available == 28  # the last token's slot is freed
    assert full_stats(cache) == (4, 4, 0)

    assert cache.match([1, 2, 3, 4, 5]).slots.tolist() == [0, 1, 2, 3]
    assert cache.match([1, 2, 3, 4, 5, 6]).length == 4
    assert cache.match([1, 2, 3, 4]).length == 3
    assert cache.match([1, 2, 3, 4, 6]).length == 3  # the pair (4, 6) is not cached
    assert cache.match([1]).length == 0

    nxt = cache.admit([1, 2, 3, 4, 5, 6, 7])
    assert nxt.cached_length == 4
    assert nxt.slots.tolist() == [0, 1, 2, 3, 5, 6, 7]
    assert cache.finish(nxt) == 6
    assert cache.match([1, 2, 3, 4, 5, 6, 7]).slots.tolist() == [0, 1, 2, 3, 5, 6]
    assert cache.stats().available == 26


def test_bigram_keys_with_pages_cache_only_whole_pages_of_pairs() -> None:
    cache = AuditedCache(capacity=32, page_size=4, bigram=True)
    lease = cache.admit(seq(0, 9))  # 8 pairs: two whole pages
    assert cache.finish(lease) == 8
    assert cache.match(seq(0, 9)).slots.tolist() == seq(0, 8)
    assert cache.match(seq(0, 8)).length == 4  # 7 pairs: one whole page
    short = cache.admit(seq(100, 8))
    assert cache.finish(short) == 4
    assert cache.stats().available == 32 - 12


# ---------------------------------------------------------------------- reset


def test_reset_invalidates_leases_and_handles_and_never_reuses_node_ids() -> None:
    cache = AuditedCache(capacity=16, events=True)
    x = insert(cache, [1, 2, 3, 4])
    lease = cache.admit([1, 2, 3, 4, 5])
    receipt = cache.lock(x)
    assert locks(cache, x) == [2]
    seen_ids = set(cache.tree.node_ids())
    cache.take_events()

    cache.reset()
    assert lease.state is LeaseState.INVALIDATED
    assert lease.lock is None
    with pytest.raises(LeaseError):
        cache.finish(lease)
    with pytest.raises(LeaseError):
        cache.extend(lease, [6])
    with pytest.raises(StaleHandleError):
        cache.tree.node(x)
    with pytest.raises(StaleHandleError):
        cache.lock(x)
    with pytest.raises(LockError):
        cache.unlock(receipt)
    stats = cache.stats()
    assert (stats.available, stats.nodes, stats.active_leases, stats.held_by_requests) == (
        16, 0, 0, 0)
    assert full_stats(cache) == (0, 0, 0)
    assert cache.match([1, 2, 3, 4]).length == 0
    assert cache.take_events() == [AllBlocksCleared()]

    again = cache.admit([1, 2, 3, 4])
    assert again.slots.tolist() == [0, 1, 2, 3]  # the pool is fresh again
    cache.finish(again)
    y = cache.match([1, 2, 3, 4]).node
    assert y is not None
    assert min(cache.tree.node_ids()) > max(seen_ids)
    assert y not in seen_ids


def test_reset_without_events_queues_nothing() -> None:
    cache = AuditedCache(capacity=8)
    insert(cache, [1, 2])
    cache.reset()
    assert cache.take_events() == []


# ---------------------------------------------------------------------- locks by handle


def test_an_explicit_lock_pins_the_path_until_unlocked() -> None:
    cache = AuditedCache(capacity=16)
    insert(cache, [1, 2, 3, 4])
    insert(cache, [1, 2, 5, 6])
    leaf = cache.match([1, 2, 5, 6]).node
    shared = cache.match([1, 2]).node
    receipt = cache.lock(leaf)
    assert locks(cache, leaf) == [1]
    assert locks(cache, shared) == [1]
    assert cache.evict(100)["full"] == 2  # only [3, 4]
    assert cache.match([1, 2, 5, 6]).length == 4
    cache.unlock(receipt)
    with pytest.raises(LockError):
        cache.unlock(receipt)
    assert cache.evict(100)["full"] == 4
    assert cache.stats().nodes == 0


def test_every_step_of_a_mixed_workload_keeps_invariants() -> None:
    """A longer run through every operation at page size 16 (each call is audited)."""
    rng = np.random.default_rng(7)
    cache = AuditedCache(capacity=16 * 16, page_size=16, policy="lfu")
    system = seq(1, 40)
    actions: list[Callable[[], Any]] = []
    for i in range(30):
        prompt = system + rng.integers(0, 50, size=int(rng.integers(1, 40))).tolist()
        lease = cache.admit(prompt)
        if i % 3 == 0:
            cache.commit(lease, len(prompt) // 2)
        cache.extend(lease, [i, i + 1])
        actions.append(lambda lease=lease: cache.finish(lease))
        if i % 4 == 3:
            cache.abort(lease)
            actions.pop()
        if len(actions) > 3:
            actions.pop(0)()
    for action in actions:
        action()
    assert cache.stats().active_leases == 0
    assert cache.match(system).length == 32
    assert full_stats(cache)[2] == 0
