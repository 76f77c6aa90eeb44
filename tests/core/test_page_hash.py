"""The page hash option: xxh3_128 chains checked by hand with xxhash, SHA-256 unchanged,
ids equal however they are computed, stable across processes, and the config that names it."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys

import pytest
import xxhash

from radixkv import BlockRemoved, BlockStored, CacheConfig
from radixkv.core import hashing
from radixkv.core.hashing import (
    PAGE_HASHES,
    SHA256,
    event_id,
    event_ids,
    key_identity,
    namespace_seed,
    page_digests,
    page_hash,
)
from radixkv.core.tree_config import TreeConfig
from radixkv.errors import ConfigError
from radixkv.events.snapshot import resident_pages

from ..audited import AuditedCache

TAG = b"radixkv-namespace-v1\x00"
U64 = (1 << 64) - 1


def le_u32(tokens: list[int]) -> bytes:
    return struct.pack(f"<{len(tokens)}I", *tokens)


def hand_seed(namespace: tuple[object, object], name: str) -> bytes:
    text = repr((type(namespace[0]).__name__, namespace[0], type(namespace[1]).__name__,
                 namespace[1])).encode()
    if name == "sha256":
        return hashlib.sha256(TAG + text).digest()
    return xxhash.xxh3_128(TAG + text).digest()


def hand_ids(tokens: list[int], page_size: int, name: str,
             namespace: tuple[object, object] = (None, None)) -> list[int]:
    """Event ids of every whole page, chained from the namespace seed, by hand."""
    previous, out = hand_seed(namespace, name), []
    for start in range(0, len(tokens) - len(tokens) % page_size, page_size):
        data = previous + le_u32(tokens[start : start + page_size])
        previous = (hashlib.sha256(data).digest() if name == "sha256"
                    else xxhash.xxh3_128(data).digest())
        out.append(struct.unpack(">q", previous[:8])[0] or 1)
    return out


def run(prompts: list[list[int]], page_size: int, name: str, namespace: object = None
        ) -> tuple[AuditedCache, list[BlockStored]]:
    cache = AuditedCache(capacity=512, page_size=page_size, events=True, page_hash=name)
    for prompt in prompts:
        cache.finish(cache.admit(prompt, namespace))
    events = cache.take_events()
    assert all(isinstance(e, BlockStored) for e in events)
    return cache, events  # type: ignore[return-value]


def ids_of(events: list[BlockStored]) -> list[int]:
    return [i for event in events for i in event.block_hashes]


# ---------------------------------------------------------------------- known answers


@pytest.mark.parametrize("name", PAGE_HASHES)
@pytest.mark.parametrize("page_size", [1, 4, 16])
def test_published_ids_equal_the_hand_chain(name: str, page_size: int) -> None:
    tokens = [(31 * i + 7) % 32000 for i in range(3 * page_size + 1)]
    _, events = run([tokens], page_size, name)
    assert ids_of(events) == hand_ids(tokens, page_size, name)
    assert events[0].parent_block_hash is None


def test_xxh3_digests_are_16_bytes_sha256_32() -> None:
    assert page_hash("xxh3_128").digest_size == 16 == len(xxhash.xxh3_128_digest(b""))
    assert SHA256.digest_size == 32 and page_hash("sha256") is SHA256


def test_known_answers_are_the_same_in_a_fresh_process_with_another_hash_seed() -> None:
    tokens = list(range(1, 41))
    here = {name: ids_of(run([tokens], 4, name)[1]) for name in PAGE_HASHES}
    script = (
        "import json; from radixkv import PrefixCache, CacheConfig\n"
        "out = {}\n"
        "for name in ('sha256', 'xxh3_128'):\n"
        "    c = PrefixCache(CacheConfig(capacity=128, page_size=4, events=True, "
        "page_hash=name))\n"
        "    c.finish(c.admit(list(range(1, 41)), ('lora', 7)))\n"
        "    c.finish(c.admit(list(range(1, 41))))\n"
        "    out[name] = [[i for i in e.block_hashes] for e in c.take_events()]\n"
        "print(json.dumps(out))\n")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    text = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                          capture_output=True, text=True).stdout
    theirs = json.loads(text)
    for name in PAGE_HASHES:
        salted, plain = theirs[name]
        assert plain == here[name] == hand_ids(tokens, 4, name)
        assert salted == hand_ids(tokens, 4, name, ("lora", 7))


# ---------------------------------------------------------------------- namespaces


def test_xxh3_chains_start_from_the_namespace_seed() -> None:
    tokens = list(range(100, 116))
    for space in [(None, None), ("lora", None), (None, "salt"), (3, "salt")]:
        _, events = run([tokens], 4, "xxh3_128", space)
        assert ids_of(events) == hand_ids(tokens, 4, "xxh3_128", space)
        assert namespace_seed(space, page_hash("xxh3_128")) == hand_seed(space, "xxh3_128")


def test_the_same_pages_in_two_namespaces_never_share_an_xxh3_id() -> None:
    tokens = list(range(16))
    first = ids_of(run([tokens], 4, "xxh3_128", ("a", None))[1])
    second = ids_of(run([tokens], 4, "xxh3_128", (None, "a"))[1])
    assert not set(first) & set(second)


def test_sha256_and_xxh3_ids_differ_for_the_same_pages() -> None:
    tokens = list(range(16))
    assert not set(ids_of(run([tokens], 4, "sha256")[1])) & set(
        ids_of(run([tokens], 4, "xxh3_128")[1]))


# ---------------------------------------------------------------------- however computed


@pytest.mark.parametrize("name", PAGE_HASHES)
def test_ids_survive_splits_and_equal_a_cache_built_in_another_order(name: str) -> None:
    shared = list(range(1, 13))
    a, b = [*shared, 50, 51, 52, 53], [*shared, 60, 61, 62, 63]
    forward, events = run([a, b], 4, name)  # b splits a's node after 3 pages
    backward, _ = run([b, a], 4, name)
    for prompt in (a, b):
        want = hand_ids(prompt, 4, name)
        for cache in (forward, backward):
            node = cache.tree.node(cache.match(prompt).node)
            path = []
            while node.parent is not None:
                path[:0] = page_digests(node, cache.tree.page_bytes, cache.tree.log.hasher)
                node = node.parent
            assert [event_id(d) for d in path] == want
    second = events[1]  # b's own page, its parent the last shared page of a's chain
    assert second.parent_block_hash == hand_ids(shared, 4, name)[-1]
    assert second.block_hashes == hand_ids(b, 4, name)[-1:]


@pytest.mark.parametrize("name", PAGE_HASHES)
def test_snapshot_and_removal_carry_the_ids_the_stores_carried(name: str) -> None:
    prompts = [list(range(1, 21)), [*range(1, 9), *range(90, 102)]]
    cache, events = run(prompts, 4, name)
    stored = sorted(ids_of(events))
    assert sorted(i for e in resident_pages(cache.cache) for i in e.block_hashes) == stored
    cache.evict(full=10_000)
    removed = cache.take_events()
    assert all(isinstance(e, BlockRemoved) for e in removed)
    assert sorted(i for e in removed for i in e.block_hashes) == stored


@pytest.mark.parametrize("count", [0, 1, 2, 64, 65, 300])
@pytest.mark.parametrize("name", PAGE_HASHES)
def test_event_ids_in_one_call_equal_one_at_a_time(name: str, count: int) -> None:
    hasher = page_hash(name)
    digests = [hasher.digest(bytes([i % 256, i // 256])) for i in range(count)]
    if count:
        digests[count // 2] = b"\x00" * 8 + digests[count // 2][8:]  # id 0 maps to 1
    assert event_ids(digests, hasher) == [event_id(d) for d in digests]
    head = hasher.digest(b"head")
    assert hasher.ids(digests, head) == (event_id(head), [event_id(d) for d in digests])


@pytest.mark.parametrize("count", [1, 2, 64, 65, 300])
@pytest.mark.parametrize("name", PAGE_HASHES)
def test_unsigned_ids_are_the_same_64_bits_read_unsigned(name: str, count: int) -> None:
    hasher = page_hash(name)
    digests = [hasher.digest(bytes([i % 256, i // 256])) for i in range(count)]
    digests[-1] = b"\xff" + digests[-1][1:]  # negative ids: signed and unsigned differ
    digests[count // 2] = b"\x00" * 8 + digests[count // 2][8:]  # id 0 maps to 1
    head = b"\x80" + hasher.digest(b"head")[1:]
    unsigned = [event_id(d) & U64 for d in digests]
    assert hasher.ids(digests, head, unsigned=True) == (event_id(head) & U64, unsigned)
    assert hasher.ids(digests, None, unsigned=True) == (None, unsigned)
    assert hasher.ids(digests, head) != hasher.ids(digests, head, unsigned=True)  # signed
    assert unsigned[count // 2] == 1


# ---------------------------------------------------------------------- configuration


def test_page_hash_is_a_validated_config_field_passed_to_the_tree() -> None:
    config = CacheConfig(capacity=64, page_size=4, events=True, page_hash="xxh3_128")
    assert config.tree_config().page_hash == "xxh3_128"
    assert CacheConfig(capacity=64).page_hash == "sha256"
    with pytest.raises(ConfigError, match="unknown page_hash 'md5'"):
        CacheConfig(capacity=64, page_hash="md5")
    with pytest.raises(ConfigError):
        TreeConfig(page_hash="SHA256")


def test_xxh3_without_xxhash_installed_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "xxhash", None)  # import raises ImportError
    hashing._xxh3_128.cache_clear()  # built by earlier tests with xxhash importable
    with pytest.raises(ConfigError, match=r"radixkv\[fasthash\]"):
        CacheConfig(capacity=64, page_hash="xxh3_128")
    assert CacheConfig(capacity=64).page_hash == "sha256"


def test_key_identity_names_the_hash_page_size_and_key_unit() -> None:
    assert key_identity("sha256", 16, False) == "radixkv-v1/sha256/page=16/u32le"
    assert key_identity("xxh3_128", 1, True) == "radixkv-v1/xxh3_128/page=1/u32le-bigram"
    identities = {key_identity(h, p, b) for h in PAGE_HASHES for p in (1, 16)
                  for b in (False, True)}
    assert len(identities) == 8


@pytest.mark.parametrize("name", PAGE_HASHES)
def test_host_tier_backups_carry_the_device_ids_of_the_chosen_hash(name: str) -> None:
    from radixkv.host import HostTier

    tokens = list(range(1, 18))
    cache = AuditedCache(capacity=64, page_size=4, events=True, page_hash=name,
                         host=HostTier(capacity=64))
    cache.finish(cache.admit(tokens))
    cache.wait()
    events = cache.take_events()
    assert [(type(e), e.medium) for e in events] == [(BlockStored, "GPU"), (BlockStored, "CPU")]
    for event in events:
        assert isinstance(event, BlockStored)
        assert event.block_hashes == hand_ids(tokens, 4, name)
