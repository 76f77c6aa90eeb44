"""Prefix keys and the prefix index."""

from __future__ import annotations

import random

import numpy as np
import pytest

from radixkv.sim import keys as keys_module
from radixkv.sim.keys import (
    PrefixIndex,
    SequenceKeys,
    TimedPrefixIndex,
    namespace_salt,
    page_keys,
)

from .support import tokens


def test_a_prefix_key_does_not_depend_on_what_follows() -> None:
    short = page_keys(tokens(0, 8), 4)
    long = page_keys(np.concatenate((tokens(0, 8), tokens(100, 9))), 4)
    assert len(short) == 2 and len(long) == 4
    assert short.tolist() == long[:2].tolist()


def test_different_tokens_or_positions_give_different_keys() -> None:
    keys = page_keys(np.array([1, 2, 3, 4, 2, 1, 3, 4], dtype=np.uint32), 4).tolist()
    other = page_keys(np.array([2, 1, 3, 4, 1, 2, 3, 4], dtype=np.uint32), 4).tolist()
    assert len(set(keys + other)) == 4


def test_every_token_moves_the_key_even_token_zero() -> None:
    keys = page_keys(np.zeros(12, dtype=np.uint32), 4).tolist()
    assert len(set(keys)) == 3


def test_partial_pages_have_no_key() -> None:
    assert page_keys(tokens(0, 3), 4).size == 0
    assert page_keys(tokens(0, 7), 4).size == 1


def test_namespaces_salt_keys_and_the_default_namespace_is_unsalted() -> None:
    assert namespace_salt(None) == namespace_salt((None, None)) == 0
    assert namespace_salt(("tenant-a", None)) != namespace_salt(("tenant-b", None))
    plain = page_keys(tokens(0, 8), 4)
    salted = page_keys(tokens(0, 8), 4, namespace_salt(("tenant-a", None)))
    assert not set(plain.tolist()) & set(salted.tolist())


def test_longest_finds_the_shared_prefix_by_halving() -> None:
    index = PrefixIndex(4)
    index.add(page_keys(tokens(0, 20), 4).tolist())
    probe = page_keys(np.concatenate((tokens(0, 12), tokens(500, 12))), 4).tolist()
    assert index.longest(probe) == 12
    assert index.longest(probe, limit=2) == 8
    assert index.longest(page_keys(tokens(7, 12), 4).tolist()) == 0
    assert len(index) == 5


def _halving(present: set[int], keys: list[int], limit: int | None) -> int:
    """The plain halving loop ``longest`` ran before it moved into C."""
    low, high = 0, len(keys) if limit is None else min(limit, len(keys))
    while low < high:
        middle = (low + high + 1) // 2
        if keys[middle - 1] in present:
            low = middle
        else:
            high = middle - 1
    return low


def test_longest_probes_as_the_plain_halving_loop_does_even_off_a_closed_set() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        index = PrefixIndex(4)
        index.add(k for k in range(40) if rng.random() < 0.6)  # not closed under prefixes
        probe = rng.sample(range(60), rng.randint(0, 30))
        limit = rng.choice([None, rng.randint(-1, 35)])
        assert index.longest(probe, limit) == 4 * _halving(index.keys, probe, limit)


def _parts(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.integers(0, 1 << 32, int(rng.integers(0, 30)), dtype=np.uint64).astype(np.uint32)
            for _ in range(int(rng.integers(0, 3)))]


@pytest.mark.parametrize("chunk", [1 << 17, 9, 1])
@pytest.mark.parametrize("page", [1, 4, 16])
def test_sequence_keys_equal_each_sequences_page_keys(chunk: int, page: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys_module, "CHUNK_TOKENS", chunk)  # passes of one or many sequences
    rng = np.random.default_rng(page * 1000 + chunk)
    sequences = [_parts(rng) for _ in range(80)]
    table = SequenceKeys(sequences, page)
    salt = namespace_salt(("tenant-a", None))
    for index, parts in enumerate(sequences):
        whole = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
        assert table.of(index) == page_keys(whole, page).tolist()
        assert table.of(index, salt) == page_keys(whole, page, salt).tolist()


def test_sequence_keys_of_sequences_shorter_than_a_page_are_empty() -> None:
    table = SequenceKeys([(tokens(0, 3),), (), (tokens(5, 2), tokens(9, 1))], 4)
    assert table.of(0) == table.of(1) == [] and table.of(2) == page_keys(
        np.array([5, 6, 9], dtype=np.uint32), 4).tolist() == []
    assert SequenceKeys([], 4)._offsets == [0]


def test_a_timed_index_finds_the_prefix_present_by_a_time_and_keeps_the_earliest() -> None:
    keys = page_keys(np.arange(40, dtype=np.uint32), 4).tolist()  # 10 pages
    index = TimedPrefixIndex(4)
    index.add(keys[:6], 5.0)  # one engine's step ends at 5 s
    index.add(keys[:8], 4.0)  # another, behind it in the event loop, computed more by 4 s
    index.add(keys[8:], 7.0)
    assert index.longest(keys, 3.9) == 0
    assert index.longest(keys, 4.0) == 32  # the first 6 pages count from 4 s, not 5 s
    assert index.longest(keys, 6.0) == 32
    assert index.longest(keys, 7.0) == 40
    assert index.longest(keys[:3], 4.5) == 12
    assert len(index) == 10
