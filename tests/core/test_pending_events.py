"""A BlockStored the tree queues is pending: it keeps its node's digests and packed key and
computes its fields at the first read of any of them. Read in any order, from any thread,
compared, copied or pickled, it is exactly the event built from the chain by hand."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import pickle
import struct
import threading

import pytest

from radixkv import BlockRemoved, BlockStored
from radixkv.core.events import has_pages, is_pending
from radixkv.core.hashing import STRUCT_PAGES, namespace_seed, page_hash

from ..audited import AuditedCache

FIELDS = [field.name for field in dataclasses.fields(BlockStored)]


def make_cache(**config: object) -> AuditedCache:
    return AuditedCache(capacity=4096, events=True, **config)


def hand_event(previous: bytes | None, tokens: list[int], page: int, parent: int | None,
               medium: str = "GPU") -> tuple[BlockStored, bytes]:
    """The SHA-256 event of ``tokens`` chained after ``previous``, and its last digest."""
    previous = namespace_seed((None, None)) if previous is None else previous
    ids = []
    for start in range(0, len(tokens), page):
        chunk = tokens[start:start + page]
        previous = hashlib.sha256(previous + struct.pack(f"<{len(chunk)}I", *chunk)).digest()
        ids.append(int.from_bytes(previous[:8], "big", signed=True) or 1)
    return BlockStored(ids, parent, tokens, page, medium, (None, None)), previous


def insert(cache: AuditedCache, tokens: list[int]) -> None:
    cache.finish(cache.admit(tokens))


def test_a_queued_store_is_pending_until_a_field_is_read() -> None:
    cache = make_cache(page_size=4)
    insert(cache, list(range(1, 9)))
    [event] = cache.take_events()
    assert is_pending(event)
    assert has_pages(event) and is_pending(event)  # filtering keeps it pending
    assert event.block_size == 4
    assert not is_pending(event)


@pytest.mark.parametrize("first", FIELDS)
def test_reading_any_field_first_gives_every_field_of_the_hand_chain(first: str) -> None:
    cache = make_cache(page_size=4)
    insert(cache, list(range(1, 13)))
    insert(cache, [*range(1, 9), 50, 51, 52, 53])  # splits: a child of the 2nd page
    first_event, second_event = cache.take_events()
    expected_first, _ = hand_event(None, list(range(1, 13)), 4, None)
    getattr(first_event, first)  # computes every field
    assert [getattr(first_event, name) for name in FIELDS] == [
        getattr(expected_first, name) for name in FIELDS]
    _, after_two_pages = hand_event(None, list(range(1, 9)), 4, None)
    expected_second, _ = hand_event(after_two_pages, [50, 51, 52, 53], 4,
                                    expected_first.block_hashes[1])
    getattr(second_event, first)
    assert second_event == expected_second


def test_a_pending_event_outlives_splits_and_evictions_of_its_node() -> None:
    cache = make_cache(page_size=2)
    insert(cache, [1, 2, 3, 4, 5, 6])
    insert(cache, [1, 2, 9, 9])  # splits the node the first event was built from
    cache.evict(cache.stats().components["full"].cached)  # and evicts every node
    events = cache.take_events()
    stored = [event for event in events if isinstance(event, BlockStored)]
    expected, _ = hand_event(None, [1, 2, 3, 4, 5, 6], 2, None)
    assert stored[0] == expected
    removed = {i for event in events if isinstance(event, BlockRemoved)
               for i in event.block_hashes}
    assert set(expected.block_hashes) <= removed


def test_repr_equality_copies_and_pickles_are_those_of_the_plain_event() -> None:
    cache = make_cache(page_size=2)
    insert(cache, [7, 8, 9, 10])
    pending = cache.take_events()
    plain, _ = hand_event(None, [7, 8, 9, 10], 2, None)
    assert pickle.loads(pickle.dumps(pending[0])) == plain
    [event] = pending
    assert copy.copy(event) == plain and copy.deepcopy(event) == plain
    assert repr(event) == repr(plain)
    assert dataclasses.asdict(event) == dataclasses.asdict(plain)
    assert dataclasses.replace(event, medium="CPU").medium == "CPU"
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.token_ids = []  # type: ignore[misc]


def test_a_pending_event_is_frozen_before_its_first_read() -> None:
    cache = make_cache(page_size=2)
    insert(cache, [7, 8])
    [event] = cache.take_events()
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.block_hashes = [1]  # type: ignore[misc]
    assert is_pending(event)
    assert event.token_ids == [7, 8]


def test_threads_reading_one_pending_event_at_once_all_see_its_final_fields() -> None:
    cache = make_cache(page_size=1)
    tokens = list(range(100, 400))
    insert(cache, tokens)
    [event] = cache.take_events()
    expected, _ = hand_event(None, tokens, 1, None)
    barrier = threading.Barrier(8)
    seen: list[object] = []

    def read(name: str) -> None:
        barrier.wait()
        seen.append(getattr(event, name))

    names = [FIELDS[i % len(FIELDS)] for i in range(8)]
    threads = [threading.Thread(target=read, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(map(repr, seen)) == sorted(repr(getattr(expected, n)) for n in names)


def test_an_event_built_by_its_constructor_is_never_pending() -> None:
    event = BlockStored([1, 2], None, [3, 4], 1, "GPU", (None, None))
    assert not is_pending(event) and has_pages(event)
    assert not has_pages(BlockStored([], None, [], 1, "GPU", (None, None)))
    assert not has_pages(BlockRemoved([], "GPU", (None, None)))


@pytest.mark.parametrize("pages", [1, 2, 3, STRUCT_PAGES, STRUCT_PAGES + 1])
@pytest.mark.parametrize("name", ["sha256", "xxh3_128"])
def test_chained_digests_equal_one_page_at_a_time(name: str, pages: int) -> None:
    hasher = page_hash(name)
    page_bytes = 8
    key = bytes(i % 251 for i in range(pages * page_bytes))
    cut = hasher.pages(key, page_bytes)
    assert list(cut) == [key[i:i + page_bytes] for i in range(0, len(key), page_bytes)]
    previous, expected = b"seed", []
    for page in cut:
        previous = hasher.digest(previous + page)
        expected.append(previous)
    assert hasher.chain(b"seed", key, page_bytes) == expected
    assert hasher.chain(b"seed", key, page_bytes) == expected  # the cached cutter too


def test_the_publishers_drain_keeps_pending_events_pending_for_its_sender() -> None:
    from radixkv.events.publisher import _split

    cache = make_cache(page_size=2)
    insert(cache, [1, 2, 3, 4])
    events = cache.take_events()
    [batch] = _split([*events, BlockRemoved([], "GPU", (None, None))])
    assert [id(event) for event in batch] == [id(event) for event in events]
    assert all(is_pending(event) for event in events)


def test_stored_fields_are_every_field_in_order_for_pending_and_plain_events() -> None:
    from radixkv.core.events import stored_fields

    cache = make_cache(page_size=2)
    insert(cache, [5, 6, 7, 8])
    [event] = cache.take_events()
    expected, _ = hand_event(None, [5, 6, 7, 8], 2, None)
    assert stored_fields(event) == dataclasses.astuple(expected)
    assert not is_pending(event)
    assert stored_fields(expected) == dataclasses.astuple(expected)
