"""``move_down``, which a commit uses to move a lease's lock to the end of what the tree now
holds: it must leave exactly what ``lock`` of the new prefix then ``unlock`` of the old
receipt leave. Two caches get the same random lease calls (admissions, chunked commits,
decode tokens, finishes, aborts, evictions, extra locks by hand so counts exceed one), one
with ``move_down`` replaced by the two calls; after every call both hold the same state
and pass the audit."""

from __future__ import annotations

import random
from typing import Any

import pytest

from radixkv.core.types import Lock
from radixkv.errors import LockError, OutOfSlotsError

from ..audited import AuditedCache, id_free_state
from .test_lock_fast_paths import CONFIGS


def lock_then_unlock(tree: Any) -> Any:
    def move_down(receipt: Lock, node: Any, end: int | None = None) -> Lock:
        moved = tree.lock(node, end)
        tree.unlock(receipt)
        return moved

    return move_down


def spy_on_moves(tree: Any) -> list[bool]:
    """Per ``move_down`` call on ``tree``, whether it moved the lock itself (no ``lock``
    call: not the fallback)."""
    moved: list[bool] = []
    locks = [0]
    lock, move_down = tree.locker.lock, tree.move_down

    def counted_lock(*args: Any) -> Any:
        locks[0] += 1
        return lock(*args)

    def spied_move_down(*args: Any) -> Any:
        before = locks[0]
        result = move_down(*args)
        moved.append(locks[0] == before)
        return result

    # the fallback calls its own part's lock; the cache calls the tree's move_down
    tree.locker.lock, tree.move_down = counted_lock, spied_move_down
    return moved


def run(caches: tuple[AuditedCache, AuditedCache], call: str, *args: Any) -> Any:
    """``call`` on each cache, with each cache's own leases in ``args`` (pairs); ``None``
    where a cache ran out of slots. Then their states agree."""
    results = []
    for side, cache in enumerate(caches):
        own = [a[side] if isinstance(a, tuple) else a for a in args]
        try:
            results.append(getattr(cache, call)(*own))
        except OutOfSlotsError:
            results.append(None)
    assert id_free_state(caches[0]) == id_free_state(caches[1]), call
    assert (results[0] is None) == (results[1] is None), call
    return tuple(results)


@pytest.mark.parametrize("combo", sorted(CONFIGS))
@pytest.mark.parametrize("page", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_move_down_leaves_what_lock_then_unlock_leaves(combo: str, page: int, seed: int) -> None:
    rng = random.Random(seed)
    caches = (AuditedCache(capacity=240, page_size=page, **CONFIGS[combo]),
              AuditedCache(capacity=240, page_size=page, **CONFIGS[combo]))
    moved = spy_on_moves(caches[0].tree)
    caches[1].tree.move_down = lock_then_unlock(caches[1].tree)
    known: list[list[int]] = [[1, 2, 3, 4, 5, 6, 7, 8]]
    active: list[tuple[Any, Any]] = []
    receipts: list[tuple[Any, Any]] = []
    for _ in range(150):
        roll = rng.random()
        if roll < 0.25:
            base = rng.choice(known)
            tokens = base[: rng.randint(0, len(base))] + [rng.randint(1, 4) for _ in range(
                rng.randint(1, 12))]
            for _ in range(rng.choice((1, 1, 2))):  # twins: one commits what the other holds
                leases = run(caches, "admit", tokens)
                if leases[0] is not None:
                    active.append(leases)
            known.append(tokens)
        elif roll < 0.5 and active:
            leases = rng.choice(active)
            run(caches, "commit", leases, rng.randint(0, leases[0].num_tokens))
        elif roll < 0.6 and active:
            run(caches, "extend", rng.choice(active), [rng.randint(1, 4)] * rng.randint(1, 6))
        elif roll < 0.75 and active:
            leases = active.pop(rng.randrange(len(active)))
            run(caches, "finish" if rng.random() < 0.8 else "abort", leases)
        elif roll < 0.85:
            query = rng.choice(known)
            found = [cache.match(query) for cache in caches]
            if found[0].length:
                receipts.append(run(caches, "lock", (found[0], found[1])))
        elif roll < 0.93 and receipts:
            run(caches, "unlock", receipts.pop(rng.randrange(len(receipts))))
        else:
            run(caches, "evict", rng.randint(1, 30))
    for leases in active:
        run(caches, "finish", leases)
    for receipt_pair in receipts:
        run(caches, "unlock", receipt_pair)
    for stats in caches[0].stats().components.values():
        assert stats.protected == 0
    if combo == "full":
        assert any(moved), "the fast path never ran"


def test_a_lock_moved_onto_nodes_another_lease_holds_pins_nothing_twice() -> None:
    caches = (AuditedCache(capacity=64, page_size=1), AuditedCache(capacity=64, page_size=1))
    caches[1].tree.move_down = lock_then_unlock(caches[1].tree)
    run(caches, "finish", run(caches, "admit", [1, 2, 3]))
    first, second = run(caches, "admit", [1, 2, 3, 4, 5, 6]), run(caches, "admit",
                                                                     [1, 2, 3, 4, 5, 6])
    run(caches, "commit", first, 5)
    run(caches, "commit", second)  # [3, 5) is locked by the first lease already
    assert caches[0].tree.protected == [6]
    run(caches, "finish", first)
    run(caches, "finish", second)
    assert caches[0].tree.protected == [0]


def test_move_down_refuses_a_released_receipt_and_changes_nothing() -> None:
    cache = AuditedCache(capacity=64, page_size=1)
    lease = cache.admit([1, 2, 3, 4])
    cache.commit(lease)
    tree = cache.tree
    node = lease.lock.node
    stale = tree.lock(node)
    tree.unlock(stale)
    before = id_free_state(cache)
    with pytest.raises(LockError, match="already released"):
        tree.move_down(stale, node)
    assert id_free_state(cache) == before
    cache.check_invariants()


def test_move_down_to_a_node_off_the_receipts_path_is_lock_then_unlock() -> None:
    caches = (AuditedCache(capacity=64, page_size=1), AuditedCache(capacity=64, page_size=1))
    for cache in caches:
        for tokens in ([1, 2, 3, 4], [1, 2, 9, 9], [5, 6]):
            cache.finish(cache.admit(tokens))
    ends = []
    for cache in caches:
        tree = cache.tree
        receipt = tree.lock(tree.node(cache.match([1, 2, 3, 4]).node))
        other = tree.node(cache.match([1, 2, 9, 9]).node)
        if cache is caches[0]:
            ends.append(tree.move_down(receipt, other))
        else:
            ends.append(tree.lock(other))
            tree.unlock(receipt)
        cache.check_invariants()
    assert id_free_state(caches[0]) == id_free_state(caches[1])
    assert ends[0].node.start == ends[1].node.start
