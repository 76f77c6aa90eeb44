"""Chained page hashes: digests by hand with hashlib, namespaces, event ids, storage keys."""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import pytest

from radixkv import BlockStored
from radixkv.core.hashing import (
    chain_page_digests,
    event_id,
    namespace_seed,
    page_digests,
    storage_key,
)
from radixkv.core.keys import pack_tokens

from ..audited import AuditedCache


def le_u32(tokens: list[int]) -> bytes:
    return struct.pack(f"<{len(tokens)}I", *tokens)


def hand_chain(seed: bytes, tokens: list[int], page_size: int) -> list[bytes]:
    """SHA-256(previous digest || page tokens as little-endian u32), page by page."""
    out, previous = [], seed
    for start in range(0, len(tokens) - len(tokens) % page_size, page_size):
        previous = hashlib.sha256(previous + le_u32(tokens[start : start + page_size])).digest()
        out.append(previous)
    return out


def hand_event_id(digest: bytes) -> int:
    value = struct.unpack(">q", digest[:8])[0]
    return value or 1


def cache_with(
    prompts: list[list[int]], page_size: int, namespace: object = None, bigram: bool = False
) -> AuditedCache:
    cache = AuditedCache(capacity=256, page_size=page_size, events=True, bigram=bigram)
    for prompt in prompts:
        cache.finish(cache.admit(prompt, namespace))
    return cache


def stored_ids(cache: AuditedCache) -> list[int]:
    ids: list[int] = []
    for event in cache.take_events():
        assert isinstance(event, BlockStored)
        ids.extend(event.block_hashes)
    return ids


# ---------------------------------------------------------------------- chain


def test_chain_page_digests_equals_a_hand_computation() -> None:
    seed = namespace_seed((None, None))
    tokens = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    key = pack_tokens(np.array(tokens, dtype=np.uint32), bigram=False)
    assert chain_page_digests(seed, key, 4 * 4) == hand_chain(seed, tokens, 4)


def test_chain_continues_from_the_previous_digest() -> None:
    seed = namespace_seed((None, None))
    tokens = list(range(100, 108))
    key = pack_tokens(np.array(tokens, dtype=np.uint32), bigram=False)
    whole = chain_page_digests(seed, key, 8)
    first = chain_page_digests(seed, key[:8], 8)
    rest = chain_page_digests(first[-1], key[8:], 8)
    assert whole == first + rest


@pytest.mark.parametrize("page_size", [1, 4, 16])
def test_cached_node_digests_equal_the_hand_chain_from_the_namespace_seed(page_size: int) -> None:
    tokens = [(7 * i + 3) % 1000 for i in range(3 * page_size)]
    cache = cache_with([tokens], page_size)
    expected = hand_chain(namespace_seed((None, None)), tokens, page_size)
    node = cache.tree.node(cache.match(tokens).node)
    assert page_digests(node, cache.tree.page_bytes) == expected
    assert stored_ids(cache) == [hand_event_id(d) for d in expected]


def test_digests_of_a_child_chain_from_its_parents_last_page() -> None:
    shared = [1, 2, 3, 4]
    a = [*shared, 10, 11, 12, 13]
    b = [*shared, 20, 21, 22, 23]
    cache = cache_with([a, b], page_size=4)  # b splits a's node after one page
    seed = namespace_seed((None, None))
    for prompt in (a, b):
        leaf = cache.tree.node(cache.match(prompt).node)
        assert leaf.start == 4
        assert page_digests(leaf, cache.tree.page_bytes) == hand_chain(seed, prompt, 4)[1:]
        parent = leaf.parent
        assert parent is not None
        assert page_digests(parent, cache.tree.page_bytes) == hand_chain(seed, shared, 4)


def test_bigram_pages_hash_the_packed_pairs() -> None:
    tokens = [5, 6, 7, 8, 9]
    cache = cache_with([tokens], page_size=2, bigram=True)
    node = cache.tree.node(cache.match(tokens).node)
    seed = namespace_seed((None, None))
    first = hashlib.sha256(seed + le_u32([5, 6, 6, 7])).digest()
    second = hashlib.sha256(first + le_u32([7, 8, 8, 9])).digest()
    assert page_digests(node, cache.tree.page_bytes) == [first, second]


# ---------------------------------------------------------------------- namespaces


def test_namespace_seed_is_deterministic_and_32_bytes() -> None:
    assert namespace_seed(("lora", "salt")) == namespace_seed(("lora", "salt"))
    assert len(namespace_seed((None, None))) == 32


def test_distinct_namespaces_have_distinct_seeds() -> None:
    spaces = [(None, None), ("a", None), (None, "a"), ("a", "a"), (1, None), ("1", None),
              (None, 1), (None, "1"), (0, None)]
    seeds = {namespace_seed(space) for space in spaces}
    assert len(seeds) == len(spaces)


def test_the_same_tokens_hash_differently_in_different_namespaces() -> None:
    tokens = [1, 2, 3, 4, 5, 6, 7, 8]
    ids = {}
    for space in [None, ("lora", None), (None, "tenant"), ("lora", "tenant")]:
        ids[space] = stored_ids(cache_with([tokens], page_size=4, namespace=space))
        assert len(ids[space]) == 2
    every = [i for chain in ids.values() for i in chain]
    assert len(set(every)) == len(every)


def test_the_same_tokens_in_the_same_namespace_hash_equally_across_caches() -> None:
    tokens = list(range(16))
    assert stored_ids(cache_with([tokens], 4, ("x", "y"))) == stored_ids(
        cache_with([tokens], 4, ("x", "y"))
    )


# ---------------------------------------------------------------------- ids and keys


def test_event_id_is_the_first_eight_bytes_big_endian_signed() -> None:
    digest = bytes(range(1, 33))
    assert event_id(digest) == int.from_bytes(bytes(range(1, 9)), "big", signed=True)
    assert event_id(b"\xff" * 8 + b"\x00" * 24) == -1
    assert event_id(b"\x80" + b"\x00" * 31) == -(2**63)
    assert event_id(b"\x7f" + b"\xff" * 7 + b"\x00" * 24) == 2**63 - 1


def test_event_id_ignores_bytes_after_the_eighth() -> None:
    assert event_id(b"\x01" * 8 + b"\x00" * 24) == event_id(b"\x01" * 8 + b"\xff" * 24)


def test_event_id_is_never_zero() -> None:
    assert event_id(b"\x00" * 32) == 1
    assert event_id(b"\x00" * 8 + b"\xab" * 24) == 1


def test_event_ids_of_real_digests_fit_in_int64_and_are_non_zero() -> None:
    seed = namespace_seed((None, None))
    tokens = list(range(256))
    for digest in hand_chain(seed, tokens, 1):
        value = event_id(digest)
        assert value != 0
        assert -(2**63) <= value < 2**63


def test_storage_key_is_the_lowercase_hex_digest() -> None:
    digest = hashlib.sha256(b"page").digest()
    key = storage_key(digest)
    assert key == digest.hex() == hashlib.sha256(b"page").hexdigest()
    assert len(key) == 64
    assert bytes.fromhex(key) == digest


def test_page_digests_are_cached_on_the_node() -> None:
    tokens = list(range(8))
    cache = cache_with([tokens], page_size=4)
    node = cache.tree.node(cache.match(tokens).node)
    first = page_digests(node, cache.tree.page_bytes)
    assert node.hashes is not None
    assert page_digests(node, cache.tree.page_bytes) is first
