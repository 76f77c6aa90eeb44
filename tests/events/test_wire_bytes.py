"""Whole batches byte for byte against msgspec, the encoder vLLM uses: structs declared from
the wire notes (/work/shared/EVENTS_WIRE.md, sections 4.4 and 4.5) encode every batch of a
random workload, and radixkv's encoder must give the same bytes in each configuration."""

from __future__ import annotations

import random
from typing import Any

import pytest

msgpack = pytest.importorskip(
    "msgpack", reason="msgpack is not installed (pip install -e '.[events]')")
msgspec = pytest.importorskip("msgspec", reason="msgspec is not installed (dev extra)")

from radixkv import AllBlocksCleared, BlockRemoved, BlockStored  # noqa: E402
from radixkv.core.events import KVEvent, is_pending  # noqa: E402
from radixkv.events import BatchEncoder, PublisherConfig  # noqa: E402

from .support import insert, make_cache  # noqa: E402

U64 = (1 << 64) - 1
TAGGED = {"tag_field": "type", "omit_defaults": True}


# vLLM's current form: tagged maps, required fields always written, optional ones omitted
# when None; BlockStored's 15 fields + tag make msgspec write a map16 header.
class Stored(msgspec.Struct, tag="BlockStored", **TAGGED):  # type: ignore[call-arg]
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    cache_salt: str | None = None  # radixkv's, written right after lora_name
    extra_keys: list[Any] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None
    ownership: str | None = None
    session_id: str | None = None
    lookahead_token_ids: list[list[int]] | None = None


class Removed(msgspec.Struct, tag="BlockRemoved", **TAGGED):  # type: ignore[call-arg]
    block_hashes: list[int]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


class Cleared(msgspec.Struct, tag="AllBlocksCleared", **TAGGED):  # type: ignore[call-arg]
    pass


# vLLM <= 0.23: positional arrays with the tag first (extra_keys written, as nil).
class LegacyStored(msgspec.Struct, tag="BlockStored", array_like=True):
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[Any] | None


class LegacyRemoved(msgspec.Struct, tag="BlockRemoved", array_like=True):
    block_hashes: list[int]
    medium: str | None


class LegacyCleared(msgspec.Struct, tag="AllBlocksCleared", array_like=True):
    pass


class Batch(msgspec.Struct, array_like=True, omit_defaults=True):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


def names(namespace: tuple[object, object], from_extra_key: bool) -> tuple[Any, Any]:
    """``lora_name`` and ``cache_salt`` by the rules of docs/events.md (Namespaces)."""
    extra_key, salt = namespace
    lora = extra_key if from_extra_key and isinstance(extra_key, str) else None
    rest = None if lora is not None else extra_key
    if rest is None and (salt is None or isinstance(salt, str)):
        return lora, salt
    return lora, f"radixkv:{rest!r}:{salt!r}"


def reference(config: PublisherConfig, ts: float, events: list[KVEvent]) -> bytes:
    """The batch as msgspec encodes it from structs built field by field."""
    def wire(value: int) -> int:
        return value if config.signed_hashes else value & U64

    legacy = config.legacy_arrays
    structs: list[Any] = []
    for event in events:
        if isinstance(event, AllBlocksCleared):
            structs.append(LegacyCleared() if legacy else Cleared())
        elif isinstance(event, BlockRemoved):
            fields = ([wire(h) for h in event.block_hashes], config.wire_medium(event.medium))
            structs.append(LegacyRemoved(*fields) if legacy else Removed(*fields))
        else:
            lora, salt = names(event.namespace, config.lora_from_extra_key)
            parent = event.parent_block_hash
            common = ([wire(h) for h in event.block_hashes],
                      None if parent is None else wire(parent), list(event.token_ids),
                      event.block_size, None, config.wire_medium(event.medium), lora)
            structs.append(LegacyStored(*common, None) if legacy
                           else Stored(*common, cache_salt=salt))
    return msgspec.msgpack.encode(Batch(ts, structs, config.dp_rank))


EDGE_HASHES = [1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, -1, -(2**31), -(2**31) - 1,
               -(2**32), -(2**63), 5, -128, 127, 128, -33]


def workload_batches(rng: random.Random) -> list[list[KVEvent]]:
    """The events of caches at page 1, 4 and 16 (namespaces of every kind, evictions,
    resets), and events built with edge-case hashes, media and namespaces."""
    namespaces: list[Any] = [None, ("lora-b", None), (None, "salt"), (7, None), (None, 5),
                             ("a", "b"), ("a", 5)]
    batches: list[list[KVEvent]] = []
    for page in (1, 4, 16):
        cache = make_cache(page_size=page, capacity=96 * page)
        for _ in range(60):
            for _ in range(rng.randint(0, 3)):
                tokens = [rng.randrange(1, 2**20) for _ in range(rng.randint(0, 6 * page))]
                insert(cache, tokens, rng.choice(namespaces))
            if rng.random() < 0.25:
                cache.evict(full=rng.randint(1, 20) * page)
            if rng.random() < 0.03:
                cache.reset()
            batches.append(cache.take_events())
    for _ in range(40):
        hashes = rng.sample(EDGE_HASHES, rng.randint(1, 4))
        namespace = rng.choice(namespaces) or (None, None)
        medium = rng.choice(["GPU", "CPU", "STORAGE", "DISK"])
        batches.append([
            BlockStored(hashes, rng.choice([None, *EDGE_HASHES]), [0, 2**32 - 1] * len(hashes),
                        2, medium, namespace),
            BlockRemoved(hashes, medium, namespace), AllBlocksCleared()])
    return batches


CONFIGS = [{}, {"signed_hashes": True}, {"legacy_arrays": True},
           {"legacy_arrays": True, "signed_hashes": True}, {"lora_from_extra_key": False},
           {"medium_gpu": "DEVICE", "medium_cpu": "CPU_PINNED", "dp_rank": 3}]


@pytest.mark.parametrize("options", CONFIGS, ids=lambda options: ",".join(options) or "default")
def test_every_batch_is_byte_identical_to_msgspecs(options: dict[str, Any]) -> None:
    config = PublisherConfig(**options)
    encoder = BatchEncoder(config)
    batches = workload_batches(random.Random(33))
    assert sum(map(len, batches)) > 500  # the workload publishes
    for step, events in enumerate(batches):
        ts = 1_700_000_000.0 + step / 7
        assert encoder.batch(ts, events, config.dp_rank) == reference(config, ts, events)


def test_the_comparison_tells_a_stock_msgpack_map_header_and_a_changed_field() -> None:
    # negative controls: what differs only in a header's width, or in one field, must fail
    config = PublisherConfig()
    event = BlockStored([3, -4], None, [1, 2, 3, 4], 2, "GPU", (None, None))
    ours = BatchEncoder(config).batch(1.5, [event], 0)
    assert ours == reference(config, 1.5, [event])
    as_dict = msgpack.packb([1.5, [msgpack.unpackb(BatchEncoder(config).event(event))], 0])
    assert msgpack.unpackb(as_dict) == msgpack.unpackb(ours) and as_dict != ours  # 0x88
    changed = BlockStored([3, -4], None, [1, 2, 3, 4], 4, "GPU", (None, None))
    assert reference(config, 1.5, [changed]) != ours


def test_stores_and_removes_without_pages_are_left_out_of_a_batch() -> None:
    encoder = BatchEncoder(PublisherConfig())
    kept = BlockRemoved([9], "GPU", (None, None))
    empty = [BlockStored([], None, [], 1, "GPU", (None, None)),
             BlockRemoved([], "GPU", (None, None))]
    assert encoder.batch(2.0, [empty[0], kept, empty[1]], 0) == encoder.batch(2.0, [kept], 0)
    assert msgpack.unpackb(encoder.batch(2.0, empty, 0)) == [2.0, [], 0]


def pending_batch(tokens: list[int]) -> list[KVEvent]:
    """A cache's pending stores at page 1: a prompt (more pages than one ``struct`` call
    reads ids of), an extension under it in a namespace, evictions."""
    cache = make_cache(page_size=1, capacity=1024)
    insert(cache, tokens)
    insert(cache, [*tokens, 5, 6, 7], ("lora-b", "salt"))
    insert(cache, [*tokens[:40], 9, 9], (7, None))
    cache.evict(full=3)
    return cache.take_events()


@pytest.mark.parametrize("options", CONFIGS, ids=lambda options: ",".join(options) or "default")
def test_pending_stores_encode_to_the_bytes_of_their_computed_fields(
        options: dict[str, Any]) -> None:
    config = PublisherConfig(**options)
    tokens = [random.Random(5).randrange(2**32) for _ in range(300)]
    events = pending_batch(tokens)
    assert sum(is_pending(event) for event in events) == 3
    pending = BatchEncoder(config).batch(3.0, events, config.dp_rank)
    assert sum(is_pending(event) for event in events) == 3  # the encoder computed none
    assert pending == reference(config, 3.0, events)  # which computes every field
    assert not any(map(is_pending, events))
    assert BatchEncoder(config).batch(3.0, events, config.dp_rank) == pending
    # negative control: one token more or less of the prompt changes ids and tokens
    assert BatchEncoder(config).batch(3.0, pending_batch(tokens[1:]), config.dp_rank) != pending
