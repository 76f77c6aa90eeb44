"""The lock fast paths (FULL alone; FULL + a window component; FULL + a one-node one)
against the general plan: two caches get the same random calls — locks by handle and by a
length inside a node, inserts that split locked nodes above, inside and below the window,
evictions that park locked candidates, unlocks in any order — one with the fast paths
switched off, and after every call both hold the same state (tree, lock counts, ledgers,
candidate queues, slots) and pass the audit."""

from __future__ import annotations

import random
from typing import Any

import pytest

from radixkv.errors import OutOfSlotsError

from ..audited import AuditedCache, id_free_state

CONFIGS: dict[str, dict[str, Any]] = {
    "full": {},
    "full+swa": {"components": ("full", "swa"), "sliding_window": 6},
    "full+mamba": {"components": ("full", "mamba"), "mamba_track_interval": 2,
                   "mamba_states": 64},
}


def pair(combo: str, page: int) -> tuple[AuditedCache, AuditedCache]:
    fast = AuditedCache(capacity=160, page_size=page, **CONFIGS[combo])
    general = AuditedCache(capacity=160, page_size=page, **CONFIGS[combo])
    locker = general.tree.locker
    locker._lone_path = locker._path_window = locker._path_node = False
    return fast, general


def agree(caches: tuple[AuditedCache, AuditedCache], call: str) -> None:
    assert id_free_state(caches[0]) == id_free_state(caches[1]), call


def both(caches: tuple[AuditedCache, AuditedCache], call: str, *args: Any) -> list[Any]:
    """``cache.call(*args)`` on each cache (``None`` for one that ran out of slots); then
    their states agree."""
    results = []
    for cache in caches:
        try:
            results.append(getattr(cache, call)(*args))
        except OutOfSlotsError:
            results.append(None)
    agree(caches, call)
    return results


def each(caches: tuple[AuditedCache, AuditedCache], call: str, firsts: Any,
         *args: Any) -> tuple[Any, Any]:
    """``cache.call(first, *args)`` on each cache with its own first argument; then their
    states agree."""
    results = tuple(getattr(cache, call)(first, *args) for cache, first in zip(caches, firsts))
    agree(caches, call)
    return results  # type: ignore[return-value]


def prompt(rng: random.Random, known: list[list[int]]) -> list[int]:
    base = rng.choice(known) if known and rng.random() < 0.8 else []
    return base[: rng.randint(0, len(base))] + [rng.randint(1, 5) for _ in range(rng.randint(1, 9))]


@pytest.mark.parametrize("combo", sorted(CONFIGS))
@pytest.mark.parametrize("page", [1, 2])
@pytest.mark.parametrize("seed", range(5))
def test_the_fast_lock_paths_do_exactly_what_the_general_plan_does(
    combo: str, page: int, seed: int
) -> None:
    rng, caches = random.Random(seed), pair(combo, page)
    known: list[list[int]] = []
    receipts: list[tuple[Any, Any]] = []
    pinned_values = 0  # locks of a node holding every component's value
    for _ in range(120):
        roll = rng.random()
        if roll < 0.35:
            tokens = prompt(rng, known)
            leases = both(caches, "admit", tokens)
            if leases[0] is not None:
                end = len(tokens) - len(tokens) % page
                if leases[0].state_slot is not None and end > leases[0].tree_owned:
                    each(caches, "checkpoint", leases, end)  # a MAMBA state to pin
                each(caches, "finish", leases)
                known.append(tokens)
        elif roll < 0.65 and known:
            query = rng.choice(known)
            found = [cache.match(query) for cache in caches]
            if found[0].length:
                start = caches[0].tree.node(found[0].node).start  # a cut inside the node
                cut = start + page * rng.randint(1, (found[0].length - start) // page)
                receipts.append(each(caches, "lock", [r.node for r in found], cut))
                node = receipts[-1][0].node
                pinned_values += all(value is not None for value in node.values)
        elif roll < 0.8:  # parks the locked candidates it meets
            both(caches, "evict", rng.randint(1, 40))
        elif receipts:
            each(caches, "unlock", receipts.pop(rng.randrange(len(receipts))))
    for receipt_pair in receipts:
        each(caches, "unlock", receipt_pair)
    for name, stats in caches[0].stats().components.items():
        assert stats.protected == 0, name
    assert pinned_values >= 1  # the fast paths met values to pin
