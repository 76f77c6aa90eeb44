"""A third-party component (block-local attention, see :mod:`.block_local`) through every
public call of the cache, and through the conformance kit. Public names only.

Pools hand out slots 0, 1, 2... and reuse freed pages FIFO, so every slot id below follows
from the steps before it."""

from __future__ import annotations

from typing import Any

import pytest

from radixkv import CacheConfig, FullAttention, PrefixCache, supported_combinations
from radixkv.errors import ConfigError
from radixkv.testing import check_component

from .block_local import BlockLocal


def _tree(cache: PrefixCache) -> list[tuple[Any, ...]]:
    """(start, end, FULL slots, block-local slots, locks) of every node, by start."""
    rows = []
    for node in sorted(cache.tree.nodes.values(), key=lambda n: n.start):
        if node.parent is not None:
            values = [None if v is None else v.tolist() for v in node.values]
            rows.append((node.start, node.end, *values, list(node.locks)))
    return rows


def _ledgers(cache: PrefixCache) -> dict[str, tuple[int, int, int, int]]:
    """(cached, evictable, protected, pool available) per component."""
    return {name: (s.cached, s.evictable, s.protected, s.pool_available)
            for name, s in cache.stats().components.items()}


def test_a_block_local_request_life_cycle_step_by_step() -> None:
    cache = PrefixCache(CacheConfig(capacity=32, components=(FullAttention(),
                                                            BlockLocal(block=4))))
    prompt = list(range(100, 110))
    first = cache.admit(prompt)
    cache.check_invariants()
    assert (first.cached_length, first.slots.tolist()) == (0, list(range(10)))
    assert first.slots_of("block_local").tolist() == list(range(10))
    # computed 10 tokens: the next one (block 2) needs blocks 1 and 2, [4, 10)
    assert cache.slide_window(first) == 4
    assert first.dropped_of("block_local") == 4
    assert cache.finish(first) == 10
    cache.check_invariants()
    assert _tree(cache) == [(0, 4, [0, 1, 2, 3], None, [0, 0]),
                            (4, 10, list(range(4, 10)), list(range(4, 10)), [0, 0])]
    assert _ledgers(cache) == {"full": (10, 10, 0, 22), "block_local": (6, 6, 0, 26)}
    # 9 and 8 need [4, L); 7 and 4 need [0, L), a tombstone
    assert [cache.match(prompt[:n]).length for n in (10, 9, 8, 7, 4)] == [10, 9, 8, 0, 0]

    second = cache.admit([*prompt, 7, 7])
    cache.check_invariants()
    assert (second.cached_length, second.slots.tolist()) == (10, list(range(12)))
    assert second.start_of("block_local") == 4  # the lock pins the window's node only
    assert second.slots_of("block_local").tolist() == [4, 5, 6, 7, 8, 9, 10, 11]
    assert _tree(cache) == [(0, 4, [0, 1, 2, 3], None, [1, 0]),
                            (4, 10, list(range(4, 10)), list(range(4, 10)), [1, 1])]
    assert cache.evict(block_local=100) == {"full": 0, "block_local": 0}  # all locked
    cache.abort(second)
    cache.check_invariants()
    # [4, 10) goes; the leaf is removed whole, and so is [0, 4): useless without a value
    assert cache.evict(block_local=6) == {"full": 10, "block_local": 6}
    cache.check_invariants()
    stats = cache.stats()
    assert stats.nodes == 0
    assert stats.components["full"].evicted == {"budget": 0, "cascade": 0, "removal": 10}
    assert stats.components["block_local"].evicted == {"budget": 6, "cascade": 0,
                                                       "removal": 0}

    held = cache.allocate(8)
    assert held is not None
    assert held.full.tolist() == held.of("block_local").tolist() == list(range(12, 20))
    assert cache.insert(list(range(200, 208)), held) == 8
    cache.check_invariants()
    assert _tree(cache) == [(0, 8, list(range(12, 20)), list(range(12, 20)), [0, 0])]
    spare = cache.allocate(4)
    assert spare is not None and spare.full.tolist() == [20, 21, 22, 23]
    cache.release(spare)
    cache.check_invariants()
    assert _ledgers(cache) == {"full": (8, 8, 0, 24), "block_local": (8, 8, 0, 24)}
    stats = cache.stats()
    assert (stats.matches, stats.match_tokens, stats.hit_tokens) == (7, 60, 37)
    assert (stats.admitted, stats.finished, stats.aborted) == (2, 1, 1)
    assert (stats.inserted_tokens, stats.evicted_tokens) == (18, 10)


def test_block_local_commits_a_chunked_prefill_and_extends() -> None:
    cache = PrefixCache(CacheConfig(capacity=32, page_size=2,
                                    components=(FullAttention(), BlockLocal(block=4))))
    lease = cache.admit(list(range(50, 59)))  # 9 tokens, 5 pages
    assert cache.commit(lease, 6) == 6
    cache.check_invariants()
    assert lease.tree_owned == 6 and lease.lent_from("block_local") == 0
    assert cache.extend(lease, [1, 2]).tolist() == [9, 10]  # one new page
    assert cache.finish(lease) == 10
    cache.check_invariants()
    assert cache.match([*range(50, 59), 1]).length == 10


def test_block_local_is_refused_with_a_bad_block_and_listed_as_a_combination() -> None:
    with pytest.raises(ConfigError, match="block"):
        CacheConfig(capacity=8, components=(FullAttention(), BlockLocal(block=0)))
    assert ("full", "block_local") in supported_combinations([FullAttention, BlockLocal])
    assert ("full", "block_local") not in supported_combinations()  # built-ins only


def test_block_local_passes_the_conformance_kit() -> None:
    check_component(BlockLocal(block=6), max_examples=20)
