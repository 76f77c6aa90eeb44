"""How each part of a namespace appears on the wire (``lora_name`` and ``cache_salt``), and
that a decoder built the way vLLM's is (msgspec tagged structs, unknown keys skipped) still
reads every event radixkv sends."""

from __future__ import annotations

import pytest

msgpack = pytest.importorskip(
    "msgpack", reason="msgpack is not installed (pip install -e '.[events]')")
msgspec = pytest.importorskip("msgspec", reason="msgspec is not installed (dev extra)")

from radixkv import AllBlocksCleared, BlockRemoved, BlockStored  # noqa: E402
from radixkv.events import BatchEncoder, PublisherConfig  # noqa: E402


def encoder(**options: object) -> BatchEncoder:
    return BatchEncoder(PublisherConfig(**options))  # type: ignore[arg-type]


def wire_fields(namespace: tuple[object, object], **options: object) -> dict[str, object]:
    event = BlockStored([1], None, [1], 1, "GPU", namespace)
    decoded: dict[str, object] = msgpack.unpackb(encoder(**options).event(event))
    return {key: decoded.get(key, "absent") for key in ("lora_name", "cache_salt")}


@pytest.mark.parametrize(
    ("namespace", "lora_name", "cache_salt"),
    [((None, None), None, "absent"),
     (("adapter-1", None), "adapter-1", "absent"),
     ((None, "tenant-a"), None, "tenant-a"),
     (("adapter-1", "tenant-a"), "adapter-1", "tenant-a"),
     ((7, None), None, "radixkv:7:None"),
     ((7, "tenant-a"), None, "radixkv:7:'tenant-a'"),
     ((None, 5), None, "radixkv:None:5"),
     (("adapter-1", 5), "adapter-1", "radixkv:None:5")],
)
def test_every_namespace_part_is_published(namespace: tuple[object, object],
                                           lora_name: str | None, cache_salt: str) -> None:
    assert wire_fields(namespace) == {"lora_name": lora_name, "cache_salt": cache_salt}


def test_without_lora_from_extra_key_the_adapter_goes_in_the_salt() -> None:
    assert wire_fields(("adapter-1", None), lora_from_extra_key=False) == {
        "lora_name": None, "cache_salt": "radixkv:'adapter-1':None"}


def test_a_salted_block_stored_keeps_the_map16_header_with_its_real_count() -> None:
    event = BlockStored([1], None, [1], 1, "GPU", (None, "t"))
    assert encoder().event(event)[:3] == b"\xde\x00\x09"
    plain = BlockStored([1], None, [1], 1, "GPU", (None, None))
    assert encoder().event(plain)[:3] == b"\xde\x00\x08"


def test_the_legacy_array_form_has_no_place_for_a_salt() -> None:
    event = BlockStored([1], None, [1], 1, "GPU", (None, "tenant-a"))
    assert len(msgpack.unpackb(encoder(legacy_arrays=True).event(event))) == 9


# A decoder declared like vLLM's (msgspec structs tagged by "type", array_like batch, unknown
# map keys skipped, required fields enforced), written from our wire notes.
class Stored(msgspec.Struct, tag="BlockStored", tag_field="type"):
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None


class Removed(msgspec.Struct, tag="BlockRemoved", tag_field="type"):
    block_hashes: list[int]
    medium: str | None


class Cleared(msgspec.Struct, tag="AllBlocksCleared", tag_field="type"):
    pass


class Batch(msgspec.Struct, array_like=True):
    ts: float
    events: list[Stored | Removed | Cleared]
    data_parallel_rank: int | None = None


def test_a_strict_msgspec_decoder_reads_salted_events_and_heartbeats() -> None:
    enc = encoder()
    events = [AllBlocksCleared(), BlockStored([1, 2], None, [1, 2], 1, "GPU", (7, "t")),
              BlockRemoved([2], "GPU", (7, "t"))]
    batch = msgspec.msgpack.decode(enc.batch(1.5, events, 0), type=Batch)
    stored = batch.events[1]
    assert isinstance(stored, Stored) and stored.token_ids == [1, 2]
    assert isinstance(batch.events[2], Removed) and isinstance(batch.events[0], Cleared)
    heartbeat = msgspec.msgpack.decode(enc.batch(2.0, [], 3), type=Batch)
    assert (heartbeat.events, heartbeat.data_parallel_rank) == ([], 3)
