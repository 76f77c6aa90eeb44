"""The msgpack encoding, byte for byte against the wire notes (vLLM 0.33's msgspec output),
and a random workload decoded by a router mirror that must end up holding exactly the
resident pages."""

from __future__ import annotations

import random
import struct

import pytest

msgpack = pytest.importorskip(
    "msgpack", reason="msgpack is not installed (pip install -e '.[events]')")

from radixkv import AllBlocksCleared, BlockRemoved, BlockStored  # noqa: E402
from radixkv.events import BatchEncoder, PublisherConfig, resident_pages, wire_hash  # noqa: E402

from .support import insert, make_cache  # noqa: E402
from .wire_schema import Mirror, decode_batch  # noqa: E402

DEFAULT = (None, None)


def encoder(**options: object) -> BatchEncoder:
    return BatchEncoder(PublisherConfig(**options))  # type: ignore[arg-type]


def s(text: str) -> bytes:
    """A msgpack fixstr."""
    return bytes([0xA0 | len(text)]) + text.encode()


def test_block_stored_is_byte_identical_to_vllm() -> None:
    # the notes' example: int hashes [123, 2**64 - 1], token_ids [1], block_size 1
    event = BlockStored([123, -1], None, [1], 1, "GPU", DEFAULT)
    expected = (
        b"\xde\x00\x08" + s("type") + s("BlockStored")
        + s("block_hashes") + b"\x92\x7b\xcf" + b"\xff" * 8
        + b"\xb1parent_block_hash" + b"\xc0"
        + s("token_ids") + b"\x91\x01"
        + s("block_size") + b"\x01"
        + s("lora_id") + b"\xc0"
        + s("medium") + s("GPU")
        + s("lora_name") + b"\xc0"
    )
    assert encoder().event(event) == expected


def test_block_removed_and_all_blocks_cleared_bytes() -> None:
    removed = BlockRemoved([5], "GPU", DEFAULT)
    assert encoder().event(removed) == (
        b"\x83" + s("type") + s("BlockRemoved") + s("block_hashes") + b"\x91\x05"
        + s("medium") + s("GPU"))
    assert encoder().event(AllBlocksCleared()) == (
        b"\x81\xa4type\xb0AllBlocksCleared")


@pytest.mark.parametrize("dp_rank", [0, 3])
def test_a_batch_is_a_3_array_of_float64_ts_events_and_dp_rank(dp_rank: int) -> None:
    payload = encoder().batch(1700000000.25, [AllBlocksCleared()] * 2, dp_rank)
    assert payload[:2] == b"\x93\xcb"
    assert struct.unpack(">d", payload[2:10]) == (1700000000.25,)
    assert payload[10:11] == b"\x92"
    assert payload[-1:] == bytes([dp_rank])
    assert msgpack.unpackb(payload) == [1700000000.25, [{"type": "AllBlocksCleared"}] * 2,
                                        dp_rank]


def test_hashes_go_out_as_uint64_by_default_and_as_int64_on_request() -> None:
    stored = BlockStored([-2, 7], -9, [1, 2], 1, "GPU", DEFAULT)
    removed = BlockRemoved([-2, 7], "GPU", DEFAULT)
    unsigned = encoder()
    assert msgpack.unpackb(unsigned.event(stored))["block_hashes"] == [2**64 - 2, 7]
    assert msgpack.unpackb(unsigned.event(stored))["parent_block_hash"] == 2**64 - 9
    assert msgpack.unpackb(unsigned.event(removed))["block_hashes"] == [2**64 - 2, 7]
    signed = encoder(signed_hashes=True)
    assert msgpack.unpackb(signed.event(stored))["block_hashes"] == [-2, 7]
    assert msgpack.unpackb(signed.event(stored))["parent_block_hash"] == -9
    assert msgpack.unpackb(signed.event(removed))["block_hashes"] == [-2, 7]
    assert wire_hash(-1, False) == 2**64 - 1 and wire_hash(-1, True) == -1


def test_legacy_positional_arrays() -> None:
    legacy = encoder(legacy_arrays=True)
    stored = BlockStored([1, 2], None, [5, 6, 7, 8], 2, "GPU", ("lora-a", None))
    assert msgpack.unpackb(legacy.event(stored)) == [
        "BlockStored", [1, 2], None, [5, 6, 7, 8], 2, None, "GPU", "lora-a", None]
    assert msgpack.unpackb(legacy.event(BlockRemoved([1], "CPU", DEFAULT))) == [
        "BlockRemoved", [1], "CPU"]
    assert msgpack.unpackb(legacy.event(AllBlocksCleared())) == ["AllBlocksCleared"]


def test_media_map_to_the_configured_strings_and_others_pass_through() -> None:
    enc = encoder(medium_gpu="DEVICE", medium_cpu="CPU_PINNED", medium_storage="EXTERNAL")
    media = [msgpack.unpackb(enc.event(BlockRemoved([1], medium, DEFAULT)))["medium"]
             for medium in ("GPU", "CPU", "STORAGE", "DISK")]
    assert media == ["DEVICE", "CPU_PINNED", "EXTERNAL", "DISK"]


@pytest.mark.parametrize(
    ("namespace", "enabled", "expected"),
    [(("adapter-1", "tenant"), True, "adapter-1"), ((7, None), True, None),
     (DEFAULT, True, None), (("adapter-1", None), False, None)],
)
def test_lora_name_is_a_str_extra_key(namespace: tuple[object, object], enabled: bool,
                                      expected: str | None) -> None:
    enc = encoder(lora_from_extra_key=enabled)
    event = BlockStored([1], None, [1], 1, "GPU", namespace)
    assert msgpack.unpackb(enc.event(event))["lora_name"] == expected


def test_a_random_workload_leaves_a_router_holding_exactly_the_resident_pages() -> None:
    rng = random.Random(6)
    enc = encoder()
    for page in (1, 4):
        cache = make_cache(page_size=page, capacity=64 * page)
        mirror = Mirror()
        for step in range(120):
            for _ in range(rng.randint(0, 3)):
                prefix = rng.choice([[], [1, 2, 3, 4] * page, [9] * 3 * page])
                tail = [rng.randrange(50) for _ in range(rng.randint(0, 6 * page))]
                namespace = rng.choice([None, ("lora-b", None), (None, "salt")])
                insert(cache, prefix + tail, namespace)
            if rng.random() < 0.2:
                cache.evict(full=rng.randint(1, 20) * page)
            if rng.random() < 0.03:
                cache.reset()
            events = cache.take_events()
            if events:
                decoded, errors = decode_batch(enc.batch(float(step + 1), events, 0))
                assert errors == []
                for event in decoded:
                    mirror.apply(event)
            assert mirror.errors == []
            resident = {wire_hash(h, False) for e in resident_pages(cache)
                        for h in e.block_hashes}
            assert dict(mirror.held) == dict.fromkeys(resident, 1)
