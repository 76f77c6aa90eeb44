"""KV events queued by the tree: BlockStored / BlockRemoved / AllBlocksCleared.

Stored pages are replayed the way a router would replay them: every BlockStored must name a
parent announced before, carry exactly the tokens of its full pages, and hash them as the
chain says; every BlockRemoved must name pages still held, children before parents.
"""

from __future__ import annotations

import hashlib
import struct
from collections import Counter
from typing import Any

import pytest

from radixkv import AllBlocksCleared, BlockRemoved, BlockStored
from radixkv.core.hashing import namespace_seed

from ..audited import AuditedCache

DEFAULT = (None, None)


def make_cache(**config: Any) -> AuditedCache:
    config.setdefault("capacity", 512)
    config.setdefault("events", True)
    return AuditedCache(**config)


def insert(cache: AuditedCache, tokens: list[int], namespace: object = None) -> int:
    return int(cache.finish(cache.admit(tokens, namespace)))


def evict_all(cache: AuditedCache) -> None:
    cache.evict(cache.stats().components["full"].cached)
    assert cache.stats().nodes == 0


def page_id(previous: bytes, page: list[int]) -> tuple[bytes, int]:
    digest = hashlib.sha256(previous + struct.pack(f"<{len(page)}I", *page)).digest()
    value = int.from_bytes(digest[:8], "big", signed=True)
    return digest, value or 1


class Router:
    """Replays events like a KV-aware router and checks each one against the chain."""

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        self.prefix: dict[int, list[int]] = {}  # event id -> every token up to that page
        self.digest: dict[int, bytes] = {}
        self.held: Counter[int] = Counter()
        self.children: Counter[int] = Counter()
        self.parent: dict[int, int | None] = {}
        self.stored: list[int] = []
        self.removed: list[int] = []

    def apply(self, events: list[Any]) -> None:
        for event in events:
            if isinstance(event, BlockStored):
                self.store(event)
            elif isinstance(event, BlockRemoved):
                self.remove(event)
            else:
                assert isinstance(event, AllBlocksCleared)
                self.held.clear()
                self.children.clear()

    def store(self, event: BlockStored) -> None:
        size = self.page_size
        assert event.block_size == size
        assert event.medium == "GPU"
        assert event.block_hashes, "an event with no page"
        assert len(event.token_ids) == size * len(event.block_hashes), "only full pages"
        parent = event.parent_block_hash
        if parent is None:
            prefix: list[int] = []
            previous = namespace_seed(event.namespace)
        else:
            assert self.held[parent], f"parent {parent} was not announced (or is gone)"
            prefix = self.prefix[parent]
            previous = self.digest[parent]
            self.children[parent] += 1
        for index, block in enumerate(event.block_hashes):
            page = event.token_ids[index * size : (index + 1) * size]
            previous, expected = page_id(previous, page)
            assert block == expected, "block hash is not the chained hash of its tokens"
            prefix = prefix + page
            assert not self.held[block], "a held page was announced twice"
            self.prefix[block] = prefix
            self.digest[block] = previous
            self.held[block] += 1
            self.parent[block] = parent
            if index:
                self.children[event.block_hashes[index - 1]] += 1
            parent = block
            self.stored.append(block)

    def remove(self, event: BlockRemoved) -> None:
        assert event.medium == "GPU"
        # a node's pages go together, deepest first from the router's point of view
        for block in reversed(event.block_hashes):
            assert self.held[block] == 1, f"removing {block} which is not held"
            assert self.children[block] == 0, "a parent page was removed before its child"
            self.held[block] -= 1
            parent = self.parent[block]
            if parent is not None:
                self.children[parent] -= 1
            self.removed.append(block)

    def held_prefixes(self) -> list[list[int]]:
        return sorted(self.prefix[b] for b, n in self.held.items() if n)


PROMPTS = [
    list(range(0, 10)),  # 2 full pages + a partial one
    [0, 1, 2, 3, 50, 51, 52, 53, 54, 55, 56, 57],  # splits after the first page
    [0, 1, 2, 3, 4, 5, 6, 7, 70, 71, 72, 73],  # extends the first prompt's second page
    list(range(0, 12)),  # shares 8 then diverges
    [9, 9, 9],  # no full page at all
    list(range(0, 4)),  # splits nothing new: the first page is a node end already
    list(range(100, 116)),
]


def run_workload(cache: AuditedCache, router: Router) -> None:
    for prompt in PROMPTS:
        insert(cache, prompt)
        router.apply(cache.take_events())


def test_stored_events_name_an_announced_parent_and_exactly_the_pages_tokens() -> None:
    cache = make_cache(page_size=4)
    router = Router(4)
    run_workload(cache, router)
    # every full page of every prompt is held, and nothing else
    expected = sorted(
        {tuple(p[: end]) for p in PROMPTS for end in range(4, len(p) + 1, 4)}
    )
    assert router.held_prefixes() == [list(p) for p in expected]
    assert len(router.stored) == len(expected)


@pytest.mark.parametrize("page", [1, 2, 16])
def test_only_full_pages_are_announced(page: int) -> None:
    cache = make_cache(page_size=page)
    router = Router(page)
    insert(cache, list(range(1, 2 * page + page // 2 + 1)))
    events = cache.take_events()
    router.apply(events)
    assert len(events) == 1
    stored = events[0]
    assert isinstance(stored, BlockStored)
    assert len(stored.block_hashes) == 2
    assert stored.parent_block_hash is None
    assert stored.token_ids == list(range(1, 2 * page + 1))


def test_a_prompt_shorter_than_a_page_announces_nothing() -> None:
    cache = make_cache(page_size=8)
    insert(cache, [1, 2, 3, 4, 5, 6, 7])
    assert cache.take_events() == []


def test_removed_events_carry_the_hashes_that_were_stored() -> None:
    cache = make_cache(page_size=4)
    router = Router(4)
    run_workload(cache, router)
    evict_all(cache)
    router.apply(cache.take_events())
    assert Counter(router.removed) == Counter(router.stored)
    assert not +router.held


def test_removed_events_come_child_first_one_node_at_a_time() -> None:
    cache = make_cache(page_size=4)
    router = Router(4)
    run_workload(cache, router)
    while cache.evict(1)["full"]:
        events = cache.take_events()
        assert len(events) == 1 and isinstance(events[0], BlockRemoved)
        router.apply(events)  # asserts no page is removed before its children
    assert Counter(router.removed) == Counter(router.stored)


def test_a_split_emits_nothing() -> None:
    cache = make_cache(page_size=4)
    short = cache.admit(list(range(8)))  # admitted before anything is cached
    insert(cache, list(range(12)))
    (whole,) = cache.take_events()
    assert isinstance(whole, BlockStored)
    nodes = cache.stats().nodes

    cache.finish(short)  # its key ends inside the 12-token edge: a split, no new page
    assert cache.stats().nodes == nodes + 1
    assert cache.take_events() == []

    insert(cache, [0, 1, 2, 3, 40, 41, 42, 43])  # another split plus one new page
    assert cache.stats().nodes == nodes + 3
    (new,) = cache.take_events()
    assert isinstance(new, BlockStored)
    assert new.parent_block_hash == whole.block_hashes[0]
    assert new.token_ids == [40, 41, 42, 43]
    assert len(new.block_hashes) == 1


def test_a_split_node_is_removed_with_the_hashes_of_its_own_pages() -> None:
    cache = make_cache(page_size=2)
    insert(cache, [1, 2, 3, 4, 5, 6])
    (whole,) = cache.take_events()
    insert(cache, [1, 2, 3, 4, 9, 9])  # split after two pages
    cache.take_events()
    evict_all(cache)
    removed = [e for e in cache.take_events() if isinstance(e, BlockRemoved)]
    assert sorted(h for e in removed for h in e.block_hashes if h in whole.block_hashes) == sorted(
        whole.block_hashes
    )
    assert [len(e.block_hashes) for e in removed].count(2) == 1  # the upper half [1,2,3,4]


def test_inserting_an_already_cached_prompt_emits_nothing() -> None:
    cache = make_cache(page_size=2)
    insert(cache, [1, 2, 3, 4])
    cache.take_events()
    first = cache.admit([1, 2, 3, 4, 5, 6])
    second = cache.admit([1, 2, 3, 4, 5, 6])
    cache.finish(first)
    assert len(cache.take_events()) == 1
    cache.finish(second)  # duplicates only
    assert cache.take_events() == []


def test_a_match_emits_nothing() -> None:
    cache = make_cache(page_size=2)
    insert(cache, [1, 2, 3, 4])
    cache.take_events()
    cache.match([1, 2, 3])
    cache.match([1, 2, 9, 9])
    assert cache.take_events() == []


def test_events_name_their_namespace_and_chain_from_its_seed() -> None:
    cache = make_cache(page_size=2)
    router = Router(2)
    insert(cache, [1, 2, 3, 4], ("lora", "salt"))
    insert(cache, [1, 2, 3, 4])
    events = cache.take_events()
    router.apply(events)  # checks each chain against its own namespace seed
    assert [e.namespace for e in events] == [("lora", "salt"), DEFAULT]
    first, second = events
    assert isinstance(first, BlockStored) and isinstance(second, BlockStored)
    assert first.token_ids == second.token_ids
    assert set(first.block_hashes).isdisjoint(second.block_hashes)


def test_bigram_events_carry_the_first_token_of_each_pair() -> None:
    cache = make_cache(page_size=2, bigram=True)
    insert(cache, [10, 20, 30, 40, 50])  # 4 pairs: 2 pages
    (stored,) = cache.take_events()
    assert isinstance(stored, BlockStored)
    assert stored.token_ids == [10, 20, 30, 40]
    assert len(stored.token_ids) == stored.block_size * len(stored.block_hashes)


def test_events_off_queue_nothing() -> None:
    cache = make_cache(capacity=64, page_size=2, events=False)
    insert(cache, [1, 2, 3, 4])
    insert(cache, [1, 2, 5, 6])
    cache.match([1, 2])
    cache.evict(100)
    cache.reset()
    assert cache.take_events() == []


def test_reset_queues_all_blocks_cleared_after_what_came_before() -> None:
    cache = make_cache(page_size=2)
    insert(cache, [1, 2, 3, 4])
    cache.reset()
    events = cache.take_events()
    assert len(events) == 2
    assert isinstance(events[0], BlockStored)
    assert events[1] == AllBlocksCleared()
    assert cache.take_events() == []

    # after a reset the same tokens are announced again, with the same ids, as new roots
    insert(cache, [1, 2, 3, 4])
    (again,) = cache.take_events()
    assert isinstance(again, BlockStored)
    assert again.parent_block_hash is None
    assert again.block_hashes == events[0].block_hashes


def test_take_events_drains_the_queue_oldest_first() -> None:
    cache = make_cache(page_size=2)
    insert(cache, [1, 2])
    insert(cache, [3, 4])
    events = cache.take_events()
    assert [e.token_ids for e in events if isinstance(e, BlockStored)] == [[1, 2], [3, 4]]
    assert cache.take_events() == []
