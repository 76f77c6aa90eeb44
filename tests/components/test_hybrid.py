"""FULL+SWA+MAMBA together, and which component combinations a cache accepts.

Scenarios check exact slot ids, lengths, lock counts ([full, swa, mamba]) and eviction
results step by step; a seeded random workload then runs every combination at page sizes 1
and 4 against a reference that recomputes, token by token from the tree, the longest prefix
each component accepts. Every mutating call is audited, including the FULL >= SWA >= MAMBA
lock order on every node (see :mod:`support`).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import ConfigError, InvariantError, LockError, OutOfSlotsError

from .support import (
    AuditedCache,
    available,
    check_lock_order,
    evicted,
    ledger,
    locks,
    seq,
    tree,
)

PAGES = [1, 4]


def hybrid_cache(
    page: int = 4, window: int = 8, interval: int = 8, states: int = 8, capacity: int = 64,
    **kw: Any,
) -> AuditedCache:
    return AuditedCache(capacity=capacity, page_size=page, components=("full", "swa", "mamba"),
                        sliding_window=window, mamba_track_interval=interval,
                        mamba_states=states, **kw)


# ---------------------------------------------------------------------- combinations


COMBOS = {
    ("full",): {},
    ("full", "swa"): {"sliding_window": 8},
    ("full", "mamba"): {"mamba_track_interval": 8},
    ("full", "swa", "mamba"): {"sliding_window": 8, "mamba_track_interval": 8},
}


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", list(COMBOS), ids="+".join)
def test_every_supported_combination_constructs_and_caches_a_request(
    combo: tuple[str, ...], page: int
) -> None:
    cache = AuditedCache(capacity=32, page_size=page, components=combo, **COMBOS[combo])
    assert [component.name for component in cache.tree.components] == list(combo)
    assert list(cache.stats().components) == list(combo)
    lease = cache.admit(seq(100, 8))
    if "mamba" in combo:
        cache.checkpoint(lease, 8)
    assert cache.finish(lease) == 8
    assert cache.match(seq(100, 8)).length == 8


@pytest.mark.parametrize(
    "combo",
    [
        ("swa",),
        ("mamba",),
        (),
        ("full", "full"),
        ("mamba", "full"),
        ("swa", "full"),
        ("full", "mamba", "swa"),
        ("full", "swa", "swa"),
        ("full", "swa", "mamba", "mamba"),
        ("full", "host"),
    ],
    ids=lambda combo: "+".join(combo) or "none",
)
def test_unsupported_combinations_are_refused_at_construction(combo: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError, match="unsupported component combination"):
        CacheConfig(capacity=32, components=combo, sliding_window=8, mamba_track_interval=8)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"components": ("full", "mamba"), "mamba_track_interval": 4, "bigram": True},
         "bigram"),
        ({"components": ("full", "swa", "mamba"), "sliding_window": 4,
          "mamba_track_interval": 4, "bigram": True}, "bigram"),
        ({"components": ("full", "swa")}, "sliding_window"),
        ({"components": ("full", "swa", "mamba"), "mamba_track_interval": 4},
         "sliding_window"),
        ({"components": ("full", "mamba")}, "mamba_track_interval"),
        ({"components": ("full", "swa", "mamba"), "sliding_window": 4}, "mamba_track_interval"),
        ({"components": ("full", "mamba"), "page_size": 4, "mamba_track_interval": 6},
         "multiple of page_size"),
        ({"components": ("full", "mamba"), "mamba_track_interval": 0}, "mamba_track_interval"),
        ({"components": ("full", "mamba"), "mamba_track_interval": 4, "mamba_states": 0},
         "mamba_states"),
        ({"components": ("full", "swa"), "sliding_window": 0}, "sliding_window"),
        ({"components": ("full", "swa"), "page_size": 4, "sliding_window": 4,
          "swa_capacity": 6}, "swa_capacity"),
        ({"components": ("full",), "sliding_window": 4}, "without the 'swa'"),
        ({"components": ("full",), "mamba_track_interval": 4}, "without the 'mamba'"),
    ],
)
def test_invalid_component_settings_are_refused_at_construction(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        CacheConfig(capacity=32, **config)


def test_bigram_keys_are_allowed_with_swa() -> None:
    cache = AuditedCache(capacity=32, components=("full", "swa"), sliding_window=4, bigram=True)
    lease = cache.admit(seq(100, 9))
    assert cache.finish(lease) == 8  # n + 1 tokens make n pairs


# ---------------------------------------------------------------------- all three together


def test_locks_pin_full_on_the_path_swa_on_the_window_and_mamba_on_one_node() -> None:
    cache = hybrid_cache(page=4, window=12, interval=8)
    a = seq(100, 24)
    lease_a = cache.admit(a)
    assert lease_a.checkpoint_hints == (8, 16, 24)
    assert [cache.checkpoint(lease_a, h) for h in lease_a.checkpoint_hints] == [1, 2, 3]
    assert cache.finish(lease_a) == 24
    assert tree(cache) == [
        (0, 8, seq(0, 8), seq(0, 8), 1, [0, 0, 0]),
        (8, 16, seq(8, 8), seq(8, 8), 2, [0, 0, 0]),
        (16, 24, seq(16, 8), seq(16, 8), 3, [0, 0, 0]),
    ]

    lease_b = cache.admit([*a, *seq(500, 4)])
    assert (lease_b.cached_length, lease_b.window_start) == (24, 8)  # window [12, 24)
    assert (lease_b.copy_state_from, lease_b.state_slot) == (3, 4)
    assert lease_b.swa_slots.tolist() == seq(8, 20)  # the tree's [8, 24), then its own
    assert [row[-1] for row in tree(cache)] == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert ledger(cache, "full") == (24, 0, 24)
    assert ledger(cache, "swa") == (24, 8, 16)
    assert ledger(cache, "mamba") == (3, 2, 1)

    # everything unlocked may go: SWA on [0, 8) (its state cascades), then the state at 16
    assert cache.evict(full=100, swa=100, mamba=100) == {"full": 0, "swa": 8, "mamba": 2}
    assert tree(cache) == [
        (0, 8, seq(0, 8), None, None, [1, 0, 0]),
        (8, 16, seq(8, 8), seq(8, 8), None, [1, 1, 0]),
        (16, 24, seq(16, 8), seq(16, 8), 3, [1, 1, 1]),
    ]
    assert evicted(cache, "swa") == {"budget": 8}
    assert evicted(cache, "mamba") == {"cascade": 1, "budget": 1}
    assert cache.match(a).length == 24  # what b borrowed is intact
    assert cache.match(a[:20]).length == 0

    assert lease_b.checkpoint_hints == (28,)
    assert cache.checkpoint(lease_b, 28) == 5
    assert cache.slide_window(lease_b) == 0  # [0, 16) left its window: the tree's slots
    assert cache.finish(lease_b) == 28
    assert tree(cache)[-1] == (24, 28, seq(24, 4), seq(24, 4), 5, [0, 0, 0])
    assert available(cache) == {"full": 36, "swa": 44, "mamba": 6}

    # FULL eviction cascades to SWA and MAMBA on the same node
    assert cache.evict(full=1) == {"full": 4, "swa": 4, "mamba": 1}
    assert evicted(cache, "full") == {"budget": 4}
    assert evicted(cache, "swa") == {"budget": 8, "cascade": 4}
    assert evicted(cache, "mamba") == {"cascade": 2, "budget": 1}


def test_an_explicit_lock_pins_each_component_as_a_lease_does_and_unlocks_exactly() -> None:
    cache = hybrid_cache(page=1, window=3, interval=2)
    a = seq(100, 6)
    lease = cache.admit(a)
    for position in (2, 4, 6):
        cache.checkpoint(lease, position)
    cache.finish(lease)
    node = cache.match(a).node
    receipt = cache.lock(node)
    assert [row[-1] for row in tree(cache)] == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    cache.unlock(receipt)
    assert [row[-1] for row in tree(cache)] == [[0, 0, 0]] * 3
    before = cache.snapshot()
    with pytest.raises(LockError):
        cache.unlock(receipt)
    assert cache.snapshot() == before


def test_a_state_behind_a_tombstoned_window_is_unusable_until_a_request_revives_it() -> None:
    cache = hybrid_cache(page=1, window=4, interval=4, capacity=32)
    a = seq(100, 12)
    lease_a = cache.admit(a)
    assert [cache.checkpoint(lease_a, h) for h in lease_a.checkpoint_hints] == [1, 2, 3]
    assert cache.slide_window(lease_a) == 8
    assert cache.finish(lease_a) == 12
    assert tree(cache) == [
        (0, 4, seq(0, 4), None, 1, [0, 0, 0]),
        (4, 8, seq(4, 4), None, 2, [0, 0, 0]),
        (8, 12, seq(8, 4), seq(8, 4), 3, [0, 0, 0]),
    ]
    assert cache.match(a).length == 12
    assert cache.match(a[:11]).length == 0  # states at 4 and 8 lack their windows

    b = [*a[:8], *seq(500, 4)]
    lease_b = cache.admit(b)
    assert (lease_b.cached_length, lease_b.copy_state_from) == (0, None)
    assert lease_b.checkpoint_hints == (4, 8, 12)
    assert lease_b.swa_slots.tolist() == seq(12, 12)  # SWA queue: 12..31, then 0..7
    assert (lease_b.state_slot, cache.checkpoint(lease_b, 12)) == (4, 5)
    assert cache.finish(lease_b) == 12
    assert tree(cache) == [
        (0, 4, seq(0, 4), seq(12, 4), 1, [0, 0, 0]),  # revived with b's slots
        (4, 8, seq(4, 4), seq(16, 4), 2, [0, 0, 0]),
        (8, 12, seq(8, 4), seq(8, 4), 3, [0, 0, 0]),
        (8, 12, seq(20, 4), seq(20, 4), 5, [0, 0, 0]),
    ]
    found = cache.match(a[:11])
    assert (found.length, found.mamba_slot) == (8, 2)  # a's state at 8 is usable again
    assert available(cache) == {"full": 16, "swa": 16, "mamba": 4}


def test_swa_eviction_of_a_leaf_removes_it_with_its_full_value_and_its_state() -> None:
    cache = hybrid_cache(page=4, window=8, interval=8)
    lease = cache.admit(seq(100, 16))
    for hint in lease.checkpoint_hints:
        cache.checkpoint(lease, hint)
    cache.finish(lease)  # [0, 8) state 1, [8, 16) state 2
    cache.match(seq(100, 8))  # [0, 8) more recent: the leaf is the LRU SWA candidate
    assert cache.evict(swa=1) == {"full": 8, "swa": 8, "mamba": 1}
    assert evicted(cache, "full") == {"removal": 8}
    assert evicted(cache, "swa") == {"budget": 8}
    assert evicted(cache, "mamba") == {"cascade": 1}
    assert tree(cache) == [(0, 8, seq(0, 8), seq(0, 8), 1, [0, 0, 0])]


@pytest.mark.parametrize("window", [8, 16])
def test_the_branch_point_hint_gives_a_full_system_prompt_hit_with_all_three(
    window: int,
) -> None:
    cache = hybrid_cache(page=4, window=window, interval=32, capacity=128)
    system = seq(1000, 12)
    slots = {}
    for name, question in (("a", 2000), ("b", 3000)):
        lease = cache.admit([*system, *seq(question, 6)])
        assert lease.cached_length == 0
        assert lease.checkpoint_hints == ((16,) if name == "a" else (12, 16))
        slots[name] = [cache.checkpoint(lease, h) for h in lease.checkpoint_hints]
        cache.finish(lease)
    lease_c = cache.admit([*system, *seq(4000, 6)])
    assert lease_c.cached_length == 12
    assert lease_c.copy_state_from == slots["b"][0]
    assert lease_c.window_start == 0
    assert lease_c.swa_slots.tolist()[:12] == tree(cache)[0][3]
    assert locks(cache, lease_c.lock.node_id) == [1, 1, 1]


# ---------------------------------------------------------------------- random workloads


def _walk(cache: PrefixCache, tokens: list[int]) -> tuple[int, list[Any], list[Any], dict]:
    """Token by token along the tree: how far ``tokens`` (whole pages) run structurally, the
    FULL and SWA slot of each token on the way (``None`` where missing) and the state slot
    at each node end passed."""
    kinds = [component.name for component in cache.tree.components]
    page = cache.page_size
    n = len(tokens) - len(tokens) % page
    full: list[int | None] = []
    swa: list[int | None] = []
    states: dict[int, int] = {}
    node = cache.tree.roots.get(cache.namespace_of(None))
    pos = 0
    while node is not None and pos < n:
        child = next((c for c in node.children.values()
                      if np.frombuffer(c.key, "<u4")[:page].tolist() == tokens[pos:pos + page]),
                     None)
        if child is None:
            break
        edge = np.frombuffer(child.key, "<u4").tolist()
        k = 0
        while k < len(edge) and pos + k < n and edge[k] == tokens[pos + k]:
            k += 1
        k -= k % page
        values = child.values
        full += [None if values[0] is None else int(values[0][i]) for i in range(k)]
        if "swa" in kinds:
            swa_value = values[kinds.index("swa")]
            swa += [None if swa_value is None else int(swa_value[i]) for i in range(k)]
        pos += k
        if k < len(edge):
            break
        if "mamba" in kinds and values[kinds.index("mamba")] is not None:
            states[pos] = int(values[kinds.index("mamba")][0])
        node = child
    return pos, full, swa, states


def _reference(cache: PrefixCache, tokens: list[int]) -> tuple[int, list[int], int | None]:
    """Longest prefix every component accepts, recomputed token by token from the tree:
    (length, its FULL slots, the state at its end)."""
    kinds = [component.name for component in cache.tree.components]
    window = cache.config.sliding_window
    pos, full, swa, states = _walk(cache, tokens)
    for length in range(pos, -1, -cache.page_size):
        if any(slot is None for slot in full[:length]):
            continue
        if "swa" in kinds:
            assert window is not None
            if any(slot is None for slot in swa[max(0, length - window):length]):
                continue
        if "mamba" in kinds and length and length not in states:
            continue
        return length, [s for s in full[:length] if s is not None], states.get(length)
    raise AssertionError("length 0 is always accepted")


def _check_inserted(cache: PrefixCache, tokens: list[int], held_from: int, cached: int,
                    checkpoints: list[int]) -> None:
    """After an insert that now holds ``cached`` tokens: FULL everywhere on the path, SWA
    live wherever the request still held its window (revived or adopted), and a state at
    every checkpoint position the insert covered."""
    pos, full, swa, states = _walk(cache, tokens[:cached])
    assert pos == cached
    assert all(slot is not None for slot in full)
    if "swa" in cache.config.components:
        assert all(slot is not None for slot in swa[held_from:cached])
    assert all(p in states for p in checkpoints if p <= cached)


def _workload(combo: tuple[str, ...], page: int, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    extra: dict[str, Any] = {}
    if "swa" in combo:
        extra.update(sliding_window=rng.choice([page, 3 * page, 5 * page + 1]),
                     swa_capacity=20 * page)
    if "mamba" in combo:
        extra.update(mamba_track_interval=2 * page, mamba_states=10)
    cache = AuditedCache(capacity=32 * page, page_size=page, components=combo, **extra)
    stems = [[rng.randrange(50) for _ in range(rng.randrange(2, 6) * page)] for _ in range(3)]

    def prompt() -> list[int]:
        stem = rng.choice(stems)
        cut = rng.randrange(len(stem) + 1)
        return stem[:cut] + [rng.randrange(50) for _ in range(rng.randrange(1, 3 * page))]

    for _ in range(steps):
        leases = cache.leases()
        op = rng.choice(["admit", "admit", "match", "extend", "slide", "checkpoint",
                         "commit", "finish", "abort", "evict"])
        if op in ("admit", "match") or not leases:
            tokens = prompt()
            want = _reference(cache.cache, tokens)
            if op == "match":
                found = cache.match(tokens)
                assert (found.length, found.slots.tolist(), found.mamba_slot) == want
                continue
            if len(leases) >= 3:
                continue
            before = cache.snapshot()
            try:
                lease = cache.admit(tokens)
            except OutOfSlotsError:
                assert cache.snapshot() == before
                continue
            assert lease.cached_length == want[0]
            assert lease.slots[: want[0]].tolist() == want[1]
            assert lease.copy_state_from == want[2]
            if lease.state_slot is not None:
                assert lease.state_slot != lease.copy_state_from
                if rng.random() < 0.7:  # an engine that follows the hints
                    for hint in lease.checkpoint_hints:
                        try:
                            cache.checkpoint(lease, hint)
                        except OutOfSlotsError:
                            break
            continue
        lease = rng.choice(leases)
        before = cache.snapshot()
        try:
            if op == "extend":
                cache.extend(lease, [rng.randrange(50) for _ in range(rng.randrange(1, 2 * page))])
            elif op == "slide" and "swa" in combo:
                cache.slide_window(lease)
            elif op == "checkpoint" and "mamba" in combo:
                free = [h for h in range(lease.tree_owned + page, lease.num_tokens + 1, page)
                        if h not in lease.checkpoints]
                hints = [h for h in lease.checkpoint_hints if h in free]
                if hints or free:
                    cache.checkpoint(lease, rng.choice(hints or free))
            elif op in ("commit", "finish"):
                tokens = lease.tokens.tolist()
                held_from = max(lease.tree_owned, lease.swa_dropped)
                saved = list(lease.checkpoints)
                if op == "commit":
                    cached = cache.commit(
                        lease, rng.randrange(lease.tree_owned, lease.num_tokens + 1))
                else:
                    cached = cache.finish(lease)
                _check_inserted(cache.cache, tokens, held_from, cached, saved)
            elif op == "abort":
                cache.abort(lease)
            elif op == "evict":
                cache.evict(**{kind: rng.randrange(3 * page) for kind in combo})
        except OutOfSlotsError:
            assert cache.snapshot() == before
    for lease in cache.leases():
        cache.finish(lease)
    cache.evict(**{kind: 10**6 for kind in combo})
    assert tree(cache) == []
    assert all(stats.pool_available == stats.pool_capacity
               for stats in cache.stats().components.values())


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", list(COMBOS), ids="+".join)
def test_a_random_workload_matches_the_reference_and_keeps_every_invariant(
    combo: tuple[str, ...], page: int
) -> None:
    for seed in range(6):
        _workload(combo, page, seed, steps=150)


# ---------------------------------------------------------------------- the audit itself


def test_the_lock_order_check_and_check_invariants_catch_a_broken_order() -> None:
    cache = PrefixCache(CacheConfig(capacity=16, components=("full", "swa", "mamba"),
                                    sliding_window=4, mamba_track_interval=4))
    lease = cache.admit(seq(100, 4))
    cache.checkpoint(lease, 4)
    cache.finish(lease)
    node = cache.tree.node(cache.match(seq(100, 4)).node)
    node.locks[2] = 1  # MAMBA pinned without SWA: FULL 0 >= SWA 0 >= MAMBA 1 fails
    with pytest.raises(AssertionError, match="lock order"):
        check_lock_order(cache)
    with pytest.raises(InvariantError):
        cache.check_invariants()


def test_mamba_eviction_of_a_leaf_removes_its_full_and_swa_values_too() -> None:
    cache = hybrid_cache(page=4, window=8, interval=8)
    lease = cache.admit(seq(100, 16))
    for hint in lease.checkpoint_hints:
        cache.checkpoint(lease, hint)
    cache.finish(lease)  # [0, 8) state 1, [8, 16) state 2
    cache.match(seq(100, 8))
    assert cache.evict(mamba=1) == {"full": 8, "swa": 8, "mamba": 1}
    assert evicted(cache, "full") == {"removal": 8}
    assert evicted(cache, "swa") == {"removal": 8}
    assert evicted(cache, "mamba") == {"budget": 1}
    assert tree(cache) == [(0, 8, seq(0, 8), seq(0, 8), 1, [0, 0, 0])]
    assert available(cache) == {"full": 56, "swa": 56, "mamba": 7}
