"""Step-by-step scenarios of the SWA component on a FULL+SWA cache.

Rules under test (DESIGN §3): a prefix of length L is usable only if every token in
[max(0, L-W), L) has a live SWA value; tokens a request dropped from its window are cached as
tombstones; a later request revives tombstones inside its live window with its own fresh
slots; a lock pins SWA only on the nodes covering the last W tokens; SWA eviction tombstones
internal nodes, removes unlocked leaves whole, and FULL eviction cascades to SWA.

Most scenarios are written for page size ``p`` and scale every length by ``p``, so the same
steps run at page size 1 and 4. Every mutating call is audited (see :mod:`support`).
"""

from __future__ import annotations

from typing import Any

import pytest

from radixkv.errors import LeaseError

from .support import AuditedCache, available, evicted, ledger, locks, seq, tree

PAGES = [1, 4]


def swa_cache(page: int = 1, window: int = 4, capacity: int = 32, **kw: Any) -> AuditedCache:
    return AuditedCache(capacity=capacity, page_size=page, components=("full", "swa"),
                        sliding_window=window, **kw)


def insert(cache: AuditedCache, tokens: list[int], slide: bool = False) -> None:
    """Admit and finish one request, optionally sliding its window first."""
    lease = cache.admit(tokens)
    if slide:
        cache.slide_window(lease)
    cache.finish(lease)


def chain(cache: AuditedCache, tokens: list[int], cuts: list[int]) -> None:
    """Cache ``tokens`` as a chain of nodes ending at each of ``cuts`` and at the end
    (chunked prefill: one commit per cut, then finish)."""
    lease = cache.admit(tokens)
    for cut in cuts:
        cache.commit(lease, cut)
    cache.finish(lease)


# ---------------------------------------------------------------------- the usable-prefix rule


@pytest.mark.parametrize("p", PAGES)
def test_a_prefix_is_usable_only_while_its_last_window_tokens_are_live(p: int) -> None:
    cache = swa_cache(page=p, window=4 * p, capacity=32 * p)
    a = seq(100, 10 * p)
    insert(cache, a, slide=True)
    assert tree(cache) == [
        (0, 6 * p, seq(0, 6 * p), None, [0, 0]),
        (6 * p, 10 * p, seq(6 * p, 4 * p), seq(6 * p, 4 * p), [0, 0]),
    ]

    whole = cache.match(a)  # window [6p, 10p) is live
    assert (whole.length, whole.slots.tolist()) == (10 * p, seq(0, 10 * p))
    # one page shorter: the window [5p, 9p) reaches into the tombstone [0, 6p)
    assert cache.match(a[: 9 * p]).length == 0
    assert cache.match(a[: 6 * p]).length == 0
    assert cache.match(a[:p]).length == 0
    assert ledger(cache, "full") == (10 * p, 10 * p, 0)
    assert ledger(cache, "swa") == (4 * p, 4 * p, 0)


@pytest.mark.parametrize("p", PAGES)
def test_a_tombstone_in_the_middle_cuts_the_match_to_its_start_unless_a_window_follows(
    p: int,
) -> None:
    cache = swa_cache(page=p, window=4 * p, capacity=32 * p)
    a = seq(100, 16 * p)
    chain(cache, a, [4 * p, 8 * p])
    cache.match(a[: 4 * p])  # [0, 4p) is now the most recently used
    assert cache.evict(swa=1) == {"full": 0, "swa": 4 * p}
    assert tree(cache) == [
        (0, 4 * p, seq(0, 4 * p), seq(0, 4 * p), [0, 0]),
        (4 * p, 8 * p, seq(4 * p, 4 * p), None, [0, 0]),  # internal: tombstoned, kept
        (8 * p, 16 * p, seq(8 * p, 8 * p), seq(8 * p, 8 * p), [0, 0]),
    ]
    assert evicted(cache, "swa") == {"budget": 4 * p}
    assert evicted(cache, "full") == {}

    assert cache.match(a).length == 16 * p
    # exactly one whole window after the tombstone: usable
    at_boundary = cache.match(a[: 12 * p])
    assert (at_boundary.length, at_boundary.slots.tolist()) == (12 * p, seq(0, 12 * p))
    # one page less: the window reaches into the tombstone, cut back to its start
    short = cache.match(a[: 11 * p])
    assert (short.length, short.slots.tolist()) == (4 * p, seq(0, 4 * p))
    assert cache.match(a[: 6 * p]).length == 4 * p  # ends inside the tombstone
    assert cache.match(a[: 3 * p]).length == 3 * p  # shorter than W: [0, 3p) is live


# ---------------------------------------------------------------------- slide_window


def test_slide_window_releases_whole_pages_before_the_window_and_finish_tombstones_them() -> None:
    cache = swa_cache(page=4, window=8, capacity=64)
    a = seq(100, 20)
    lease = cache.admit(a)
    assert lease.swa_slots.tolist() == seq(0, 20)
    assert cache.slide_window(lease) == 12  # the window is [12, 20)
    assert (lease.swa_dropped, lease.swa_start) == (12, 12)
    assert lease.swa_slots.tolist() == seq(12, 8)
    assert lease.slots.tolist() == seq(0, 20)  # FULL is untouched
    assert available(cache) == {"full": 44, "swa": 56}
    assert cache.slide_window(lease) == 0  # nothing new left the window

    assert cache.extend(lease, [7, 7]).tolist() == [20, 21]  # allocates a page: 20..23
    assert cache.slide_window(lease) == 0  # window [14, 22): page [12, 16) still needed
    assert cache.extend(lease, [7, 7]).tolist() == [22, 23]
    assert cache.slide_window(lease) == 4  # window [16, 24)
    assert lease.swa_slots.tolist() == seq(16, 8)

    assert cache.finish(lease) == 24
    assert tree(cache) == [
        (0, 16, seq(0, 16), None, [0, 0]),
        (16, 24, seq(16, 8), seq(16, 8), [0, 0]),
    ]
    assert available(cache) == {"full": 40, "swa": 56}
    assert cache.match([*a, 7, 7, 7, 7]).length == 24
    assert cache.match([*a, 7, 7]).length == 0  # window [14, 22) reaches the tombstone


def test_slide_window_during_decode_releases_one_slot_per_token_at_page_size_one() -> None:
    cache = swa_cache(page=1, window=4)
    lease = cache.admit(seq(100, 5))
    assert cache.slide_window(lease) == 1
    assert lease.swa_slots.tolist() == [1, 2, 3, 4]
    assert cache.extend(lease, [200]).tolist() == [5]
    assert cache.slide_window(lease) == 1
    assert lease.swa_slots.tolist() == [2, 3, 4, 5]
    assert cache.slide_window(lease) == 0
    assert cache.stats().components["swa"].pool_available == 28

    assert cache.finish(lease) == 6
    assert tree(cache) == [
        (0, 2, [0, 1], None, [0, 0]),
        (2, 6, [2, 3, 4, 5], [2, 3, 4, 5], [0, 0]),
    ]
    assert available(cache) == {"full": 26, "swa": 28}
    assert cache.match([*seq(100, 5), 200]).length == 6


def test_slide_window_of_a_borrowed_window_releases_nothing_of_the_trees() -> None:
    cache = swa_cache(page=1, window=4)
    a = seq(100, 8)
    insert(cache, a)  # [0, 8) live, slots 0..7
    lease = cache.admit(a)
    # the window [4, 8) lies inside the single node [0, 8): the lock pins it whole
    assert (lease.cached_length, lease.window_start) == (8, 0)
    cache.extend(lease, [1, 2, 3, 4])  # slots 8..11
    assert lease.swa_slots.tolist() == seq(0, 12)
    assert cache.slide_window(lease) == 0  # [0, 8) left the window but is the tree's
    assert lease.swa_slots.tolist() == [8, 9, 10, 11]
    assert available(cache) == {"full": 20, "swa": 20}
    assert tree(cache) == [(0, 8, seq(0, 8), seq(0, 8), [1, 1])]

    assert cache.finish(lease) == 12
    assert tree(cache) == [
        (0, 8, seq(0, 8), seq(0, 8), [0, 0]),
        (8, 12, seq(8, 4), seq(8, 4), [0, 0]),
    ]
    assert cache.match([*a, 1, 2, 3, 4]).length == 12


def test_slide_window_without_swa_is_refused() -> None:
    cache = AuditedCache(capacity=8)
    lease = cache.admit([1, 2])
    with pytest.raises(LeaseError):
        cache.slide_window(lease)


def test_abort_after_slide_frees_only_what_the_lease_still_holds() -> None:
    cache = swa_cache(page=1, window=4)
    lease = cache.admit(seq(100, 10))
    assert cache.slide_window(lease) == 6
    cache.abort(lease)
    assert available(cache) == {"full": 32, "swa": 32}
    assert tree(cache) == []


# ---------------------------------------------------------------------- revival


@pytest.mark.parametrize("p", PAGES)
def test_a_later_request_revives_a_tombstone_with_its_fresh_slots_instead_of_freeing_them(
    p: int,
) -> None:
    cache = swa_cache(page=p, window=4 * p, capacity=32 * p)
    a = seq(100, 10 * p)
    insert(cache, a, slide=True)  # [0, 6p) tombstone; SWA 0..6p-1 went back to the pool
    b = [*a[: 6 * p], *seq(500, 4 * p)]

    lease = cache.admit(b)
    assert lease.cached_length == 0  # [0, 6p) has no live window
    assert lease.slots.tolist() == seq(10 * p, 10 * p)
    assert lease.swa_slots.tolist() == seq(10 * p, 10 * p)
    assert cache.finish(lease) == 10 * p
    assert tree(cache) == [
        # revived with b's SWA slots; FULL keeps the tree's, b's duplicates are freed
        (0, 6 * p, seq(0, 6 * p), seq(10 * p, 6 * p), [0, 0]),
        (6 * p, 10 * p, seq(6 * p, 4 * p), seq(6 * p, 4 * p), [0, 0]),
        (6 * p, 10 * p, seq(16 * p, 4 * p), seq(16 * p, 4 * p), [0, 0]),
    ]
    assert available(cache) == {"full": 18 * p, "swa": 18 * p}
    assert ledger(cache, "swa") == (14 * p, 14 * p, 0)
    assert cache.match(b).length == 10 * p
    assert cache.match(a[: 5 * p]).length == 5 * p  # now live
    assert cache.match(a).slots.tolist() == seq(0, 10 * p)


def test_revival_takes_only_the_part_of_a_tombstone_inside_the_requests_live_window() -> None:
    cache = swa_cache(page=1, window=4)
    a = seq(100, 10)
    insert(cache, a, slide=True)  # [0, 6) tombstone, SWA free queue: 10..31, 0..5
    b = [*a[:6], 50, 51]
    lease = cache.admit(b)
    assert lease.swa_slots.tolist() == seq(10, 8)
    assert cache.slide_window(lease) == 4  # b dropped [0, 4): its slots 10..13
    assert cache.finish(lease) == 8
    assert tree(cache) == [
        (0, 4, [0, 1, 2, 3], None, [0, 0]),  # outside b's live window: stays a tombstone
        (4, 6, [4, 5], [14, 15], [0, 0]),  # inside it: revived
        (6, 10, [6, 7, 8, 9], [6, 7, 8, 9], [0, 0]),
        (6, 8, [16, 17], [16, 17], [0, 0]),
    ]
    assert available(cache) == {"full": 20, "swa": 24}
    assert cache.match(b).length == 8
    assert cache.match(a[:6]).length == 0


def test_a_request_that_dropped_the_whole_tombstone_does_not_revive_it() -> None:
    cache = swa_cache(page=1, window=4)
    a = seq(100, 10)
    insert(cache, a, slide=True)
    b = [*a[:6], *seq(500, 4)]
    lease = cache.admit(b)
    assert cache.slide_window(lease) == 6  # slots 10..15
    cache.finish(lease)
    assert tree(cache) == [
        (0, 6, seq(0, 6), None, [0, 0]),
        (6, 10, seq(6, 4), seq(6, 4), [0, 0]),
        (6, 10, seq(16, 4), seq(16, 4), [0, 0]),
    ]
    assert available(cache) == {"full": 18, "swa": 24}


# ---------------------------------------------------------------------- locks


def test_a_lease_locks_full_on_the_whole_path_and_swa_only_on_the_window_nodes() -> None:
    cache = swa_cache(page=1, window=4)
    a = seq(100, 12)
    chain(cache, a, [4, 8])
    lease = cache.admit([*a, 1, 2])
    assert (lease.cached_length, lease.window_start, lease.swa_start) == (12, 8, 8)
    assert lease.slots.tolist() == seq(0, 14)
    # the tree's window [8, 12), then the lease's own slots
    assert lease.swa_slots.tolist() == [8, 9, 10, 11, 12, 13]
    assert [row[-1] for row in tree(cache)] == [[1, 0], [1, 0], [1, 1]]
    assert ledger(cache, "full") == (12, 0, 12)
    assert ledger(cache, "swa") == (12, 8, 4)

    cache.finish(lease)
    assert [row[-1] for row in tree(cache)] == [[0, 0]] * 4
    assert ledger(cache, "swa") == (14, 14, 0)


def test_a_window_shorter_than_the_prefix_start_locks_the_whole_path() -> None:
    cache = swa_cache(page=1, window=8)
    a = seq(100, 6)
    chain(cache, a, [2, 4])
    lease = cache.admit(a)
    assert (lease.cached_length, lease.window_start) == (6, 0)
    assert [row[-1] for row in tree(cache)] == [[1, 1], [1, 1], [1, 1]]
    assert lease.swa_slots.tolist() == seq(0, 6)
    cache.finish(lease)


@pytest.mark.parametrize("p", PAGES)
def test_a_lock_ending_inside_a_node_splits_it_and_pins_exactly_its_window(p: int) -> None:
    cache = swa_cache(page=p, window=4 * p, capacity=32 * p)
    a = seq(100, 12 * p)
    chain(cache, a, [4 * p, 8 * p])  # [0, 4p) [4p, 8p) [8p, 12p)
    b = [*a[: 10 * p], *seq(500, p)]
    lease_b = cache.admit(b)  # prefix 10p ends inside [8p, 12p): split there; window [6p, 10p)
    node_b = lease_b.lock.node_id
    assert (lease_b.cached_length, lease_b.window_start) == (10 * p, 4 * p)
    assert lease_b.slots.tolist() == [*seq(0, 10 * p), *seq(12 * p, p)]
    assert lease_b.swa_slots.tolist() == [*seq(4 * p, 6 * p), *seq(12 * p, p)]
    assert [row[:2] + row[-1:] for row in tree(cache)] == [
        (0, 4 * p, [1, 0]),
        (4 * p, 8 * p, [1, 1]),
        (8 * p, 10 * p, [1, 1]),  # the upper half the lock split off: b's node
        (10 * p, 12 * p, [0, 0]),  # the rest of the node stays evictable
    ]
    assert cache.tree.node(node_b).start == 8 * p
    assert ledger(cache, "swa") == (12 * p, 6 * p, 6 * p)

    # c shares the same prefix: the boundary at 10p exists already
    lease_c = cache.admit([*a[: 10 * p], *seq(600, p)])
    assert [row[-1] for row in tree(cache)] == [[2, 0], [2, 2], [2, 2], [0, 0]]
    cache.finish(lease_c)
    assert [row[:2] + row[-1:] for row in tree(cache)] == [
        (0, 4 * p, [1, 0]),
        (4 * p, 8 * p, [1, 1]),
        (8 * p, 10 * p, [1, 1]),
        (10 * p, 12 * p, [0, 0]),
        (10 * p, 11 * p, [0, 0]),  # c's tokens
    ]
    assert locks(cache, node_b) == [1, 1]

    # d splits [4p, 8p) at 6p, inside b's pinned range; b's receipt still undoes exactly
    lease_d = cache.admit([*a[: 6 * p], *seq(700, p)])
    cache.finish(lease_d)
    assert [row[:2] + row[-1:] for row in tree(cache)] == [
        (0, 4 * p, [1, 0]),
        (4 * p, 6 * p, [1, 1]),
        (6 * p, 8 * p, [1, 1]),
        (8 * p, 10 * p, [1, 1]),
        (10 * p, 12 * p, [0, 0]),
        (10 * p, 11 * p, [0, 0]),
        (6 * p, 7 * p, [0, 0]),
    ]
    assert ledger(cache, "swa") == (14 * p, 8 * p, 6 * p)
    assert cache.finish(lease_b) == 11 * p
    assert all(row[-1] == [0, 0] for row in tree(cache))
    assert ledger(cache, "swa") == (15 * p, 15 * p, 0)


# ---------------------------------------------------------------------- eviction


def test_swa_eviction_removes_an_unlocked_leaf_whole_and_frees_its_full_slots() -> None:
    cache = swa_cache(page=4, window=4)
    insert(cache, seq(100, 8))
    assert cache.evict(swa=1) == {"full": 8, "swa": 8}
    assert tree(cache) == []
    assert evicted(cache, "swa") == {"budget": 8}
    assert evicted(cache, "full") == {"removal": 8}
    assert available(cache) == {"full": 32, "swa": 32}
    assert cache.stats().evicted_tokens == 8


def test_swa_eviction_tombstones_an_internal_node_and_keeps_the_node_and_its_full_value() -> None:
    cache = swa_cache(page=1, window=4)
    a = seq(100, 8)
    chain(cache, a, [4])
    cache.match(a)  # touch both; the upper node has the smaller id
    nodes_before = cache.stats().nodes
    assert cache.evict(swa=2) == {"full": 0, "swa": 4}
    assert cache.stats().nodes == nodes_before == 2
    assert tree(cache) == [
        (0, 4, [0, 1, 2, 3], None, [0, 0]),
        (4, 8, [4, 5, 6, 7], [4, 5, 6, 7], [0, 0]),
    ]
    assert available(cache) == {"full": 24, "swa": 28}
    assert cache.match(a).length == 8  # the window [4, 8) is still live
    assert cache.match(a[:7]).length == 0


def test_full_eviction_cascades_to_swa_and_takes_the_tombstoned_parent_along() -> None:
    cache = swa_cache(page=1, window=4)
    insert(cache, seq(100, 10), slide=True)  # [0, 6) tombstone, [6, 10) live
    # the live leaf goes (its SWA by cascade); the tombstoned parent it leaves behind could
    # never end a match, so it is removed as well
    assert cache.evict(full=1) == {"full": 10, "swa": 4}
    assert tree(cache) == []
    assert evicted(cache, "full") == {"budget": 4, "removal": 6}
    assert evicted(cache, "swa") == {"cascade": 4}
    assert available(cache) == {"full": 32, "swa": 32}


def test_a_locked_window_is_never_evicted_while_the_rest_of_its_path_can_be_tombstoned() -> None:
    cache = swa_cache(page=1, window=4)
    a = seq(100, 12)
    chain(cache, a, [4, 8])
    lease = cache.admit([*a, 9])
    assert cache.evict(swa=100) == {"full": 0, "swa": 8}
    assert tree(cache) == [
        (0, 4, seq(0, 4), None, [1, 0]),
        (4, 8, seq(4, 4), None, [1, 0]),
        (8, 12, seq(8, 4), seq(8, 4), [1, 1]),
    ]
    assert cache.evict(full=100, swa=100) == {"full": 0, "swa": 0}
    assert cache.match(a).length == 12  # the window the lease needs is intact
    assert cache.match(a[:11]).length == 0

    cache.finish(lease)  # caches [12, 13) with slot 12
    # the window goes; the tombstoned leaves left behind can never end a match: removed too
    assert cache.evict(swa=100) == {"full": 13, "swa": 5}
    assert tree(cache) == []
    assert cache.evict(full=100) == {"full": 0, "swa": 0}
    assert evicted(cache, "swa") == {"budget": 13}
    assert evicted(cache, "full") == {"removal": 13}
    assert available(cache) == {"full": 32, "swa": 32}


@pytest.mark.parametrize(
    ("policy", "order"),
    [("lru", ["y", "z", "x"]), ("fifo", ["x", "y", "z"]), ("mru", ["x", "z", "y"])],
)
def test_swa_eviction_follows_the_policy_order(policy: str, order: list[str]) -> None:
    cache = swa_cache(page=1, window=4, policy=policy)
    prompts = {"x": seq(10, 4), "y": seq(20, 4), "z": seq(30, 4)}
    for prompt in prompts.values():
        insert(cache, prompt)  # x: slots 0..3, y: 4..7, z: 8..11
    cache.match(prompts["x"])
    first_slot = {"x": 0, "y": 4, "z": 8}
    gone: list[str] = []
    for _ in prompts:
        assert cache.evict(swa=1) == {"full": 4, "swa": 4}
        left = {row[2][0] for row in tree(cache)}  # read the tree: a match would touch it
        gone += [name for name, slot in first_slot.items() if name not in gone and slot not in left]
    assert gone == order


def test_an_admit_short_of_swa_slots_evicts_swa_in_policy_order() -> None:
    cache = swa_cache(page=1, window=4, capacity=32, swa_capacity=8)
    x, y = seq(10, 4), seq(20, 4)
    insert(cache, x)  # FULL and SWA 0..3
    insert(cache, y)  # FULL and SWA 4..7: the SWA pool is full
    cache.match(x)
    lease = cache.admit(seq(30, 4))
    assert lease.slots.tolist() == [8, 9, 10, 11]
    assert lease.swa_slots.tolist() == [4, 5, 6, 7]  # y's, freed by removing y whole
    assert cache.match(y).length == 0
    assert cache.match(x).length == 4
    assert evicted(cache, "swa") == {"budget": 4}
    assert evicted(cache, "full") == {"removal": 4}
    cache.finish(lease)
    assert available(cache) == {"full": 24, "swa": 0}
