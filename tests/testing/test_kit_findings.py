"""Bugs the conformance kit found, each as a minimal scenario kept as a regression test.

A match of chunked local attention may end at a chunk boundary inside a tombstoned node (the
empty window accepts it). Before locks were exact, the insert could not revive that node,
since the request held only its lower part, and freed the request's live slots there as
duplicates. The admission lock now splits the node where the prefix ends, so the lower part
is a node of its own and is revived."""

from __future__ import annotations

from radixkv import CacheConfig, ChunkedLocal, FullAttention, PrefixCache


def test_chunked_finish_revives_the_tombstone_its_match_ended_inside() -> None:
    cache = PrefixCache(CacheConfig(capacity=64, components=(FullAttention(),
                                                            ChunkedLocal(chunk=4))))
    prompt = list(range(100, 114))  # 14 tokens
    cache.finish(cache.admit([*prompt, 1, 1]))
    cache.finish(cache.admit([*prompt, 7, 7]))  # nodes [0, 14), [14, 16) twice
    cache.finish(cache.admit([*prompt[:10], 8, 8]))  # splits [0, 14) at 10
    pinned = cache.lock(cache.match([*prompt, 7, 7]).node)  # chunked: only [14, 16)
    assert cache.evict(chunked=10**6) == {"full": 4, "chunked": 18}
    cache.check_invariants()
    assert cache.match(prompt).length == 12  # [10, 14) is a tombstone; 12 a chunk boundary
    lease = cache.admit([*prompt, 50, 51, 52])
    assert lease.cached_length == 12
    assert cache.finish(lease) == 17
    cache.unlock(pinned)
    cache.check_invariants()
    # the request computed (and held) the chunked KV of [12, 14): the tree keeps it
    assert cache.match(prompt).length == 14
