"""Step-by-step scenarios of the MAMBA component on a FULL+MAMBA cache.

Rules under test (DESIGN §3, issue 3): a state checkpoint is one state slot at a node end
(checkpoints split nodes; a state stays with the lower half of a split); a prefix of length L
is usable only with a state exactly at L, so matches are cut back to the deepest state; an
insert is cut at its last checkpoint; a duplicate checkpoint goes back to the pool; admit
gives the request a working state slot of its own and the tree's state to copy
(copy-on-write); checkpoint hints are every track interval past the match, the branch point
and the prompt end; MAMBA eviction removes unlocked leaves whole and tombstones internal
states; a MAMBA lock pins the one node whose state is used.

The state pool has page size 1 and hands out state slots 0, 1, 2... in order, reusing freed
slots FIFO. Every mutating call is audited (see :mod:`support`).
"""

from __future__ import annotations

from typing import Any

import pytest

from radixkv.errors import InvalidArgumentError, LeaseError, OutOfSlotsError

from .support import AuditedCache, available, evicted, ledger, locks, seq, tree

PAGES = [1, 4]


def mamba_cache(
    page: int = 1, interval: int = 4, states: int = 8, capacity: int = 32, **kw: Any
) -> AuditedCache:
    return AuditedCache(capacity=capacity, page_size=page, components=("full", "mamba"),
                        mamba_track_interval=interval, mamba_states=states, **kw)


def insert(cache: AuditedCache, tokens: list[int], at: list[int]) -> list[int]:
    """Admit and finish one request that saves states at ``at``; return their slots."""
    lease = cache.admit(tokens)
    slots = [cache.checkpoint(lease, position) for position in at]
    cache.finish(lease)
    return slots


# ---------------------------------------------------------------------- admission


def test_admit_allocates_a_working_state_and_nothing_to_copy_on_a_miss() -> None:
    cache = mamba_cache()
    lease = cache.admit(seq(100, 10))
    assert (lease.state_slot, lease.copy_state_from) == (0, None)
    assert lease.checkpoint_hints == (4, 8, 10)
    assert lease.checkpoints == {}
    assert available(cache) == {"full": 22, "mamba": 7}
    cache.abort(lease)
    assert available(cache) == {"full": 32, "mamba": 8}


def test_admit_copies_the_trees_state_into_a_fresh_working_slot() -> None:
    cache = mamba_cache(page=4, interval=8, capacity=64)
    a = seq(100, 16)
    assert insert(cache, a, [8, 16]) == [1, 2]  # working state 0 is freed at finish

    lease = cache.admit([*a, 1, 2, 3, 4])
    assert lease.cached_length == 16
    assert lease.copy_state_from == 2  # the tree's state at 16: copy it ...
    assert lease.state_slot == 3  # ... into a slot of the request's own
    assert lease.slots.tolist() == seq(0, 20)
    assert lease.checkpoint_hints == (20,)
    assert [row[-1] for row in tree(cache)] == [[1, 0], [1, 1]]  # MAMBA pins one node
    assert ledger(cache, "mamba") == (2, 1, 1)
    assert cache.stats().checkpoints_used == 1

    cache.abort(lease)
    assert tree(cache) == [(0, 8, seq(0, 8), 1, [0, 0]), (8, 16, seq(8, 8), 2, [0, 0])]
    assert available(cache) == {"full": 48, "mamba": 6}


# ---------------------------------------------------------------------- checkpoints


@pytest.mark.parametrize("p", PAGES)
def test_checkpoints_split_nodes_so_each_state_sits_at_a_node_end(p: int) -> None:
    cache = mamba_cache(page=p, interval=4 * p, capacity=32 * p)
    a = seq(100, 10 * p)
    lease_a = cache.admit(a)
    assert lease_a.checkpoint_hints == (4 * p, 8 * p, 10 * p)
    assert cache.checkpoint(lease_a, 4 * p) == 1
    assert cache.checkpoint(lease_a, 10 * p) == 2
    assert cache.finish(lease_a) == 10 * p
    assert tree(cache) == [
        (0, 4 * p, seq(0, 4 * p), 1, [0, 0]),
        (4 * p, 10 * p, seq(4 * p, 6 * p), 2, [0, 0]),
    ]
    node_a = cache.match(a).node
    assert cache.stats().checkpoints_created == 2

    # b leaves a's path at 8p: its checkpoint there splits [4p, 10p)
    b = [*a[: 8 * p], *seq(500, 2 * p)]
    lease_b = cache.admit(b)
    assert (lease_b.cached_length, lease_b.copy_state_from, lease_b.state_slot) == (4 * p, 1, 3)
    assert lease_b.checkpoint_hints == (8 * p, 10 * p)
    assert lease_b.slots.tolist() == [*seq(0, 4 * p), *seq(10 * p, 6 * p)]
    assert cache.checkpoint(lease_b, 8 * p) == 4
    assert cache.checkpoint(lease_b, 10 * p) == 5
    assert cache.finish(lease_b) == 10 * p
    assert tree(cache) == [
        (0, 4 * p, seq(0, 4 * p), 1, [0, 0]),
        (4 * p, 8 * p, seq(4 * p, 4 * p), 4, [0, 0]),  # new upper half takes b's state
        (8 * p, 10 * p, seq(8 * p, 2 * p), 2, [0, 0]),  # a's state stays with the lower half
        (8 * p, 10 * p, seq(14 * p, 2 * p), 5, [0, 0]),
    ]
    assert cache.match(a).node == node_a  # the lower half keeps a's handle
    assert cache.tree.node(node_a).start == 8 * p
    assert available(cache) == {"full": 20 * p, "mamba": 4}
    stats = cache.stats()
    assert (stats.checkpoints_created, stats.checkpoints_used) == (4, 1)


@pytest.mark.parametrize("p", PAGES)
def test_a_match_is_cut_back_to_the_deepest_state(p: int) -> None:
    cache = mamba_cache(page=p, interval=4 * p, capacity=32 * p)
    a = seq(100, 10 * p)
    insert(cache, a, [4 * p, 10 * p])  # states 1 at 4p, 2 at 10p

    whole = cache.match(a)
    assert (whole.length, whole.mamba_slot, whole.slots.tolist()) == (10 * p, 2, seq(0, 10 * p))
    cut = cache.match(a[: 9 * p])
    assert (cut.length, cut.mamba_slot, cut.slots.tolist()) == (4 * p, 1, seq(0, 4 * p))
    assert cut.node == cache.match(a[: 4 * p]).node
    none = cache.match(a[: 3 * p])
    assert (none.length, none.node, none.mamba_slot, none.slots.tolist()) == (0, None, None, [])


def test_an_insert_is_cut_at_the_last_checkpoint_and_frees_the_full_slots_after_it() -> None:
    cache = mamba_cache(page=4, interval=8, capacity=64)
    lease = cache.admit(seq(100, 22))
    assert lease.slots.tolist() == seq(0, 22)  # pages 0..23
    assert lease.checkpoint_hints == (8, 16, 20)
    assert cache.checkpoint(lease, 8) == 1
    assert cache.checkpoint(lease, 12) == 2  # any page boundary may hold a state
    assert cache.finish(lease) == 12
    assert tree(cache) == [(0, 8, seq(0, 8), 1, [0, 0]), (8, 12, seq(8, 4), 2, [0, 0])]
    assert available(cache) == {"full": 52, "mamba": 6}
    assert cache.stats().inserted_tokens == 12
    assert cache.match(seq(100, 22)).length == 12


def test_a_request_without_checkpoints_caches_nothing() -> None:
    cache = mamba_cache(page=4, interval=8, capacity=64)
    lease = cache.admit(seq(100, 22))
    assert cache.finish(lease) == 0
    assert tree(cache) == []
    assert available(cache) == {"full": 64, "mamba": 8}


def test_a_duplicate_checkpoint_is_returned_to_the_pool() -> None:
    cache = mamba_cache(page=1, interval=4)
    prompt = seq(100, 8)
    x = cache.admit(prompt)  # FULL 0..7, state 0
    y = cache.admit(prompt)  # FULL 8..15, state 1 (x has not finished: no hit)
    assert cache.checkpoint(x, 8) == 2
    assert cache.checkpoint(y, 4) == 3
    assert cache.checkpoint(y, 8) == 4
    cache.finish(x)
    assert tree(cache) == [(0, 8, seq(0, 8), 2, [0, 0])]
    assert cache.stats().checkpoints_created == 1

    cache.finish(y)  # 4 splits x's node and is taken; 8 is a duplicate of x's state 2
    assert tree(cache) == [(0, 4, seq(0, 4), 3, [0, 0]), (4, 8, seq(4, 4), 2, [0, 0])]
    assert cache.stats().checkpoints_created == 2
    assert available(cache) == {"full": 24, "mamba": 6}
    assert ledger(cache, "mamba") == (2, 2, 0)


def test_chunked_prefill_commits_up_to_the_last_checkpoint_and_locks_that_node() -> None:
    cache = mamba_cache(page=4, interval=8, capacity=64)
    a = seq(100, 16)
    lease = cache.admit(a)
    assert cache.checkpoint(lease, 8) == 1
    assert cache.commit(lease) == 8  # cut at the checkpoint: [8, 16) stays the lease's
    assert lease.tree_owned == 8
    assert tree(cache) == [(0, 8, seq(0, 8), 1, [1, 1])]
    assert lease.own_slots.tolist() == seq(8, 8)
    with pytest.raises(InvalidArgumentError):
        cache.checkpoint(lease, 8)  # the tree already holds [0, 8)
    assert cache.checkpoint(lease, 16) == 2
    assert cache.finish(lease) == 16
    assert tree(cache) == [(0, 8, seq(0, 8), 1, [0, 0]), (8, 16, seq(8, 8), 2, [0, 0])]
    assert available(cache) == {"full": 48, "mamba": 6}


def test_invalid_checkpoints_are_refused_with_the_cache_unchanged() -> None:
    cache = mamba_cache(page=4, interval=8, states=2, capacity=64)
    lease = cache.admit(seq(100, 10))  # working state 0
    before = cache.snapshot()
    for position in (0, 6, 12, True, 8.0):
        with pytest.raises(InvalidArgumentError):
            cache.checkpoint(lease, position)
        assert cache.snapshot() == before
    assert cache.checkpoint(lease, 8) == 1
    after = cache.snapshot()
    with pytest.raises(InvalidArgumentError):
        cache.checkpoint(lease, 8)  # already saved
    with pytest.raises(OutOfSlotsError):
        cache.checkpoint(lease, 4)  # both state slots are the lease's
    assert cache.snapshot() == after

    full_only = AuditedCache(capacity=8)
    with pytest.raises(LeaseError):
        full_only.checkpoint(full_only.admit([1, 2]), 1)


# ---------------------------------------------------------------------- checkpoint hints


@pytest.mark.parametrize(
    ("prompt", "hints"),
    [
        (seq(900, 22), (8, 16, 20)),  # a miss: every interval, and the prompt end
        (seq(900, 16), (8, 16)),
        (seq(900, 3), ()),  # no whole page
        ([*seq(100, 16), *seq(900, 6)], (16, 20)),  # hit 8, branch 16 (an interval)
        ([*seq(100, 12), *seq(900, 10)], (12, 16, 20)),  # hit 8, branch 12
        (seq(100, 20), ()),  # fully cached
        ([*seq(100, 20), *seq(900, 3)], ()),  # fully cached but a partial page
        ([*seq(100, 20), *seq(900, 5)], (24,)),  # hit 20: next interval = the end
        (seq(100, 10), ()),  # cut to the page at 8, which holds a state
    ],
)
def test_checkpoint_hints_are_the_intervals_past_the_match_the_branch_point_and_the_end(
    prompt: list[int], hints: tuple[int, ...]
) -> None:
    cache = mamba_cache(page=4, interval=8, capacity=64)
    insert(cache, seq(100, 20), [8, 20])  # [0, 8) state 1, [8, 20) state 2
    assert cache.match(prompt).checkpoint_hints == hints
    lease = cache.admit(prompt)
    assert lease.checkpoint_hints == hints
    cache.abort(lease)


def test_checkpoint_hints_at_page_size_one_include_an_unaligned_branch_point() -> None:
    cache = mamba_cache(page=1, interval=4)
    insert(cache, seq(100, 8), [8])
    found = cache.match([*seq(100, 5), *seq(900, 6)])
    assert (found.length, found.checkpoint_hints) == (0, (4, 5, 8, 11))


# ---------------------------------------------------------------------- the branch point


SYSTEM_PROMPTS = [12, 14]  # page aligned, and not (the branch is then the page below)


def _branch_point_run(sys_len: int, b_saves_branch: bool) -> tuple[AuditedCache, Any, int]:
    """FULL+MAMBA, page 4, track interval 32 (longer than any prompt here). a, b and c share
    a system prompt of ``sys_len`` tokens and then ask different 6-token questions. Returns
    the cache, c's lease and b's state slot at the branch point (-1 if b saved none)."""
    cache = mamba_cache(page=4, interval=32, capacity=128)
    system = seq(1000, sys_len)
    end = (sys_len + 6) // 4 * 4
    branch = sys_len // 4 * 4

    lease_a = cache.admit([*system, *seq(2000, 6)])
    assert (lease_a.cached_length, lease_a.checkpoint_hints) == (0, (end,))
    for hint in lease_a.checkpoint_hints:
        cache.checkpoint(lease_a, hint)
    assert cache.finish(lease_a) == end

    lease_b = cache.admit([*system, *seq(3000, 6)])
    assert lease_b.cached_length == 0  # a's only state is at its own prompt end
    assert lease_b.copy_state_from is None
    assert lease_b.checkpoint_hints == (branch, end)  # the branch point is hinted
    saved = {h: cache.checkpoint(lease_b, h) for h in lease_b.checkpoint_hints
             if b_saves_branch or h != branch}
    assert cache.finish(lease_b) == end

    lease_c = cache.admit([*system, *seq(4000, 6)])
    return cache, lease_c, saved.get(branch, -1)


@pytest.mark.parametrize("sys_len", SYSTEM_PROMPTS)
def test_saving_the_branch_point_hint_turns_a_miss_into_a_full_system_prompt_hit(
    sys_len: int,
) -> None:
    cache, lease_c, state_at_branch = _branch_point_run(sys_len, b_saves_branch=True)
    branch = sys_len // 4 * 4
    assert lease_c.cached_length == branch
    assert lease_c.copy_state_from == state_at_branch
    assert lease_c.state_slot not in (None, state_at_branch)
    assert lease_c.slots[:branch].tolist() == seq(0, branch)  # a's FULL slots
    assert lease_c.checkpoint_hints == ((sys_len + 6) // 4 * 4,)
    assert [row[:2] for row in tree(cache)] == [
        (0, branch), (branch, (sys_len + 6) // 4 * 4), (branch, (sys_len + 6) // 4 * 4),
    ]
    assert locks(cache, lease_c.lock.node_id) == [1, 1]
    stats = cache.stats()
    assert (stats.hit_tokens, stats.checkpoints_used) == (branch, 1)


@pytest.mark.parametrize("sys_len", SYSTEM_PROMPTS)
def test_without_the_branch_point_state_the_next_request_still_misses(sys_len: int) -> None:
    cache, lease_c, _ = _branch_point_run(sys_len, b_saves_branch=False)
    branch = sys_len // 4 * 4
    assert (lease_c.cached_length, lease_c.copy_state_from, lease_c.lock) == (0, None, None)
    assert lease_c.checkpoint_hints == (branch, (sys_len + 6) // 4 * 4)  # still hinted
    # b's insert split a's node at the branch point, but no state sits there
    start, end, _, state, _ = tree(cache)[0]
    assert (start, end, state) == (0, branch, None)
    assert cache.stats().hit_tokens == 0


# ---------------------------------------------------------------------- eviction and locks


def test_mamba_eviction_removes_an_unlocked_leaf_whole() -> None:
    cache = mamba_cache(page=1, interval=4)
    insert(cache, seq(100, 8), [8])
    assert cache.evict(mamba=1) == {"full": 8, "mamba": 1}
    assert tree(cache) == []
    assert evicted(cache, "mamba") == {"budget": 1}
    assert evicted(cache, "full") == {"removal": 8}
    assert available(cache) == {"full": 32, "mamba": 8}


def test_mamba_eviction_tombstones_an_internal_state_and_matches_fall_back() -> None:
    cache = mamba_cache(page=1, interval=4)
    a = seq(100, 10)
    insert(cache, a, [4, 10])  # [0, 4) state 1 (older id first in LRU ties), [4, 10) state 2
    assert cache.evict(mamba=1) == {"full": 0, "mamba": 1}
    assert tree(cache) == [(0, 4, seq(0, 4), None, [0, 0]), (4, 10, seq(4, 6), 2, [0, 0])]
    assert cache.match(a).length == 10
    assert cache.match(a[:9]).length == 0

    # the leaf goes whole, and so does its parent: a stateless leaf can never end a match
    assert cache.evict(mamba=1) == {"full": 10, "mamba": 1}
    assert tree(cache) == []
    assert cache.match(a).length == 0
    assert cache.evict(full=1) == {"full": 0, "mamba": 0}
    assert evicted(cache, "mamba") == {"budget": 2}
    assert evicted(cache, "full") == {"removal": 10}


def test_full_eviction_cascades_to_mamba() -> None:
    cache = mamba_cache(page=1, interval=4)
    insert(cache, seq(100, 10), [4, 10])
    assert cache.evict(full=1) == {"full": 6, "mamba": 1}
    assert tree(cache) == [(0, 4, seq(0, 4), 1, [0, 0])]
    assert evicted(cache, "full") == {"budget": 6}
    assert evicted(cache, "mamba") == {"cascade": 1}
    assert available(cache) == {"full": 28, "mamba": 7}


def test_a_mamba_lock_pins_one_node_and_its_state_is_never_evicted() -> None:
    cache = mamba_cache(page=1, interval=4)
    a = seq(100, 10)
    insert(cache, a, [4, 10])
    lease = cache.admit([*a, 1])
    assert lease.copy_state_from == 2
    assert [row[-1] for row in tree(cache)] == [[1, 0], [1, 1]]
    assert cache.evict(full=100, mamba=100) == {"full": 0, "mamba": 1}
    assert tree(cache) == [(0, 4, seq(0, 4), None, [1, 0]), (4, 10, seq(4, 6), 2, [1, 1])]
    assert ledger(cache, "mamba") == (1, 0, 1)
    assert cache.finish(lease) == 10  # no checkpoint past the prefix: nothing new cached
    assert [row[-1] for row in tree(cache)] == [[0, 0], [0, 0]]
    assert available(cache) == {"full": 22, "mamba": 7}


def test_a_checkpoint_short_of_state_slots_evicts_the_least_recent_state() -> None:
    cache = mamba_cache(page=1, interval=4, states=2)
    assert insert(cache, seq(100, 8), [8]) == [1]  # tree: [0, 8) state 1; free: 0
    lease = cache.admit(seq(500, 4))
    assert lease.state_slot == 0
    assert cache.checkpoint(lease, 4) == 1  # the tree's only state, its leaf removed whole
    assert tree(cache) == []
    assert evicted(cache, "mamba") == {"budget": 1}
    assert evicted(cache, "full") == {"removal": 8}
    cache.finish(lease)
    assert tree(cache) == [(0, 4, [8, 9, 10, 11], 1, [0, 0])]


def test_a_split_under_a_mamba_lock_copies_the_pin_to_the_upper_half_until_unlock() -> None:
    cache = mamba_cache(page=1, interval=4)
    a = seq(100, 10)
    insert(cache, a, [4, 10])  # [0, 4) state 1, [4, 10) state 2; free states 3..7, 0
    lease_b = cache.admit([*a, 1])
    assert (lease_b.state_slot, lease_b.copy_state_from) == (3, 2)
    node_b = lease_b.lock.node_id
    assert [row[-1] for row in tree(cache)] == [[1, 0], [1, 1]]

    lease_c = cache.admit([*a[:8], 9, 9])
    assert (lease_c.cached_length, lease_c.copy_state_from, lease_c.state_slot) == (4, 1, 4)
    assert [row[-1] for row in tree(cache)] == [[2, 1], [1, 1]]
    assert cache.checkpoint(lease_c, 8) == 5
    assert cache.finish(lease_c) == 8  # splits b's node at 8; c's [8, 10) is not cached
    assert tree(cache) == [
        (0, 4, seq(0, 4), 1, [1, 0]),
        (4, 8, seq(4, 4), 5, [1, 1]),  # the upper half carries b's pin over
        (8, 10, seq(8, 2), 2, [1, 1]),  # b's handle, b's state
    ]
    assert cache.tree.node(node_b).start == 8
    assert ledger(cache, "mamba") == (3, 1, 2)
    assert cache.evict(mamba=10) == {"full": 0, "mamba": 1}  # only the state at 4 is free
    assert cache.finish(lease_b) == 10
    assert [row[-1] for row in tree(cache)] == [[0, 0], [0, 0], [0, 0]]
    assert ledger(cache, "mamba") == (2, 2, 0)
    assert available(cache) == {"full": 22, "mamba": 6}
