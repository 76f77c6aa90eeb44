"""The tree walk (match, and the walk insert and the host match share) against a brute-force
reference: the longest prefix a query shares with a cached sequence, in whole pages. The walk
moves by each node's ``stop`` and has no bound test, so the cases that matter are a query
ending inside a page, on an edge's end, inside an edge, and bigram keys (8 bytes a key
element); the audit checks every node's ``stop``."""

from __future__ import annotations

import random

import pytest

from radixkv.errors import InvariantError

from ..audited import AuditedCache


def shared_pages(query: list[int], cached: list[list[int]], page: int, bigram: bool) -> int:
    """Tokens of ``query`` a match must report: the longest common prefix with any cached
    sequence, in whole pages of key elements (a bigram key has one element less)."""
    best = 0
    for seq in cached:
        common = 0
        for a, b in zip(query, seq):
            if a != b:
                break
            common += 1
        elements = common - 1 if bigram and common else common
        if bigram:  # a sequence caches only its whole pages of bigrams
            elements = min(elements, (len(seq) - 1) // page * page)
        else:
            elements = min(elements, len(seq) // page * page)
        best = max(best, elements // page * page)
    return best


def grow(rng: random.Random, cached: list[list[int]]) -> list[int]:
    """A new sequence: a prefix of a cached one (any length) plus a few fresh tokens."""
    base = rng.choice(cached) if cached and rng.random() < 0.8 else []
    cut = rng.randint(0, len(base))
    return base[:cut] + [rng.randint(1, 6) for _ in range(rng.randint(1, 12))]


@pytest.mark.parametrize("page", [1, 2, 4])
@pytest.mark.parametrize("bigram", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_match_length_is_the_longest_shared_prefix_in_whole_pages(
    page: int, bigram: bool, seed: int
) -> None:
    rng = random.Random(seed)
    cache = AuditedCache(capacity=4096, page_size=page, bigram=bigram)
    cached: list[list[int]] = []
    for _ in range(40):
        seq = grow(rng, cached)
        cache.finish(cache.admit(seq))
        cached.append(seq)
        for _ in range(3):
            query = grow(rng, cached)[: rng.randint(0, 30)]
            assert cache.match(query).length == shared_pages(query, cached, page, bigram), query


def test_a_query_ending_inside_a_page_stops_at_the_last_whole_page() -> None:
    cache = AuditedCache(capacity=64, page_size=4)
    cache.finish(cache.admit(list(range(1, 13))))  # one edge of 3 pages
    assert cache.match(list(range(1, 11))).length == 8  # 2 pages and half of the third
    assert cache.match(list(range(1, 13))).length == 12  # ends on the edge's end
    assert cache.match(list(range(1, 15))).length == 12  # past the edge, inside a page
    assert cache.match([1, 2, 3]).length == 0  # not one whole page


def test_a_query_leaving_an_edge_mid_way_keeps_the_shared_pages() -> None:
    cache = AuditedCache(capacity=64, page_size=2)
    cache.finish(cache.admit([1, 2, 3, 4, 5, 6, 7, 8]))
    assert cache.match([1, 2, 3, 4, 5, 9, 7, 8]).length == 4  # the page [5, 9] differs
    cache.finish(cache.admit([1, 2, 3, 4, 9, 9]))  # splits the edge after 2 pages
    assert cache.match([1, 2, 3, 4, 5, 6, 7, 8]).length == 8
    assert cache.match([1, 2, 3, 4, 9, 9, 9]).length == 6


def test_check_invariants_catches_a_node_whose_stop_is_wrong() -> None:
    cache = AuditedCache(capacity=64, page_size=2)
    cache.finish(cache.admit([1, 2, 3, 4, 5, 6]))
    cache.finish(cache.admit([1, 2, 7, 8]))  # a split: the upper half is a new node
    node = cache.tree.node(cache.match([1, 2, 7, 8]).node)
    node.stop += 4
    with pytest.raises(InvariantError, match="stop"):
        cache.cache.check_invariants()
    node.stop -= 4
    cache.cache.check_invariants()
