"""Cache bugs found by the reference model, kept as regression tests.

Commit ending inside a chunk whose start lies in a tombstoned node
------------------------------------------------------------------
A prefix of whole chunks is usable whatever its chunked tombstones, so ``admit`` may borrow
up to a chunk boundary ``kC`` that lies inside a node whose chunked value is a tombstone.
``commit(lease, L)`` with ``kC < L < (k+1)C`` then inserts (borrowed = ``kC``): the
request's own chunked slots cover ``[kC, L)``, but the tombstoned node starts before ``kC``,
so it is neither split at ``kC`` nor revived. Moving the lock to ``L`` then lends the
chunked window ``[kC, L)`` from the tree (``TokenSide.relend`` →
``TreeCore.values_between``), meets the tombstone and raises ``InvalidSlotsError`` — after
the insert already changed the tree, so the cache is left inconsistent (even
``check_invariants()`` raises). Fixed since a lock that ends inside a node splits it there
(the admission lock of ``kC`` makes ``kC`` a node boundary, so the insert revives the
tombstone above it with the request's own slots); the engine commits wherever it stops.
"""

from __future__ import annotations

from radixkv import CacheConfig, ChunkedLocal, FullAttention, PrefixCache
from radixkv.errors import RadixKVError
from radixkv.model import Engine, verify

from .support import CHUNKED_COMBOS, model_reference, small_cache, workload


def _cache_with_a_tombstoned_chunk() -> tuple[PrefixCache, list[int]]:
    """Chunks of 8: the tree holds ``tokens[:16]`` in a node ``[0, 16)`` whose chunked
    value is a tombstone (the request had slid it out of its window), then ``[16, 20)``."""
    cache = PrefixCache(CacheConfig(capacity=64, components=(FullAttention(),
                                                             ChunkedLocal(chunk=8))))
    tokens = list(range(1, 21))
    first = cache.admit(tokens[:16])
    cache.extend(first, tokens[16:])
    assert cache.slide_window(first) == 16
    cache.finish(first)
    cache.check_invariants()
    return cache, tokens


def test_the_setup_borrows_up_to_a_chunk_boundary_inside_a_tombstone() -> None:
    cache, tokens = _cache_with_a_tombstoned_chunk()
    lease = cache.admit(tokens[:16] + [99] * 4, max_match=12)
    cache.check_invariants()
    assert lease.cached_length == 8  # [8, 12) is tombstoned: the prefix stops at chunk 1
    assert lease.start_of("chunked") == 8 and len(lease.slots_of("chunked")) == 12


def test_commit_inside_the_chunk_after_a_borrowed_tombstone() -> None:
    cache, tokens = _cache_with_a_tombstoned_chunk()
    lease = cache.admit(tokens[:16] + [99] * 4, max_match=12)
    own = lease.slots_of("chunked").copy()
    assert cache.commit(lease, 12) == 12
    cache.check_invariants()
    assert lease.start_of("chunked") <= 8
    assert list(lease.slots_of("chunked")[8 - lease.start_of("chunked") :]) == list(own)


def test_an_engine_committing_inside_chunks_stays_exact() -> None:
    """The exactness run of ``full+chunked`` with commits wherever prefill chunks end."""

    combo = CHUNKED_COMBOS[0]
    report = verify(model_reference(combo), small_cache(combo, 1), workload(), chunk=20,
                    max_running=3, engine=Engine)
    assert report.passed


def test_a_commit_that_raises_leaves_the_cache_as_it_was() -> None:
    cache, tokens = _cache_with_a_tombstoned_chunk()
    lease = cache.admit(tokens[:16] + [99] * 4, max_match=12)
    before = cache.snapshot()
    try:
        cache.commit(lease, 12)
    except RadixKVError:
        cache.check_invariants()
        assert cache.snapshot() == before
    cache.check_invariants()
    cache.finish(lease)
    cache.check_invariants()
