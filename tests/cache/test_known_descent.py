"""A lease's insert (commit, finish) starts its descent at the lease's lock node instead of
the root: against a twin cache whose tree ignores that node, random request lifecycles
(admit, extend, checkpoint, commit, finish, abort, evict, with splits of locked nodes by other
requests) leave the same state after every call, and the short cut is taken."""

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


class Ignoring:
    """Wraps a tree's insert to drop ``known``: every descent starts at the root."""

    def __init__(self, insert: Any) -> None:
        self.insert = insert

    def __call__(self, *args: Any, known: Any = None, **kwargs: Any) -> Any:
        return self.insert(*args, **kwargs)


class Counting:
    """Wraps a method, counting the calls that returned something true."""

    def __init__(self, method: Any) -> None:
        self.method, self.calls = method, 0

    def __call__(self, *args: Any) -> Any:
        result = self.method(*args)
        self.calls += bool(result)
        return result


def step(caches: tuple[AuditedCache, AuditedCache], call: str, *per_cache: Any,
         **shared: Any) -> list[Any]:
    """``call`` on each cache with its own arguments and the ``shared`` keywords (``None``
    when out of slots); then the two states agree."""
    results = []
    for cache, args in zip(caches, per_cache):
        try:
            results.append(getattr(cache, call)(*args, **shared))
        except OutOfSlotsError:
            results.append(None)
    assert id_free_state(caches[0]) == id_free_state(caches[1]), call
    return results


@pytest.mark.parametrize("combo", sorted(CONFIGS))
@pytest.mark.parametrize("page", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_a_lease_insert_from_its_lock_node_equals_one_from_the_root(
    combo: str, page: int, seed: int
) -> None:
    rng = random.Random(seed)
    caches = (AuditedCache(capacity=200, page_size=page, **CONFIGS[combo]),
              AuditedCache(capacity=200, page_size=page, **CONFIGS[combo]))
    caches[1].tree.insert = Ignoring(caches[1].tree.insert)
    taken = Counting(caches[0].tree.inserter._known_start)
    caches[0].tree.inserter._known_start = taken
    known: list[list[int]] = [[rng.randint(1, 4) for _ in range(8)]]
    leases: list[list[Any]] = []
    for _ in range(150):
        roll = rng.random()
        if roll < 0.3 or not leases:
            base = rng.choice(known)
            tokens = base[: rng.randint(0, len(base))] + [rng.randint(1, 4)
                                                         for _ in range(rng.randint(1, 8))]
            priority = rng.choice((0, 0, 1, 3))  # an insert stamps priorities on its path
            pair = step(caches, "admit", (tokens,), (tokens,), priority=priority)
            if pair[0] is not None:
                leases.append(pair)
                known.append(tokens)
                end = len(tokens) - len(tokens) % page
                if pair[0].state_slot is not None and end > pair[0].tree_owned:
                    step(caches, "checkpoint", (pair[0], end), (pair[1], end))  # hits later
            continue
        pair = rng.choice(leases)
        lease = pair[0]
        if roll < 0.45:
            more = [rng.randint(1, 4) for _ in range(rng.randint(1, 5))]
            step(caches, "extend", (pair[0], more), (pair[1], more))
        elif roll < 0.55 and lease.state_slot is not None:
            end = lease.num_tokens - lease.num_tokens % page
            if end > lease.tree_owned and end not in lease.buffers[1].checkpoints:
                step(caches, "checkpoint", (pair[0], end), (pair[1], end))
        elif roll < 0.7:
            step(caches, "commit", (pair[0],), (pair[1],))
        elif roll < 0.88:
            step(caches, "finish", (pair[0],), (pair[1],))
            leases.remove(pair)
        elif roll < 0.94:
            step(caches, "abort", (pair[0],), (pair[1],))
            leases.remove(pair)
        else:
            budget = rng.randint(1, 30)
            step(caches, "evict", (budget,), (budget,))
    for pair in leases:
        step(caches, "finish", (pair[0],), (pair[1],))
    assert taken.calls >= 3  # inserts started at a lock node


def test_a_cut_inside_a_node_above_the_known_one_sends_the_descent_to_the_root() -> None:
    from radixkv.core.insertion import _bounds_every_cut

    cache = AuditedCache(capacity=64)
    cache.finish(cache.admit(list(range(1, 5))))
    cache.finish(cache.admit(list(range(1, 9))))  # nodes [0, 4) and [4, 8)
    node = cache.tree.node(cache.match(list(range(1, 9))).node)
    assert _bounds_every_cut(node, [4, 8, 12], 8)  # 4 is where the lower node starts
    assert _bounds_every_cut(node, [0, 8], 8)
    assert not _bounds_every_cut(node, [2, 8], 8)  # 2 falls inside [0, 4): a split is due
    assert not _bounds_every_cut(node, [4, 6, 8], 8)
