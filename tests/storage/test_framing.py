"""The stored form of a page: whole, this key's and of the expected size, or nothing."""

from __future__ import annotations

import pytest

from radixkv.storage.framing import HEADER_BYTES, MAGIC, frame, unframe

PAYLOAD = bytes(range(256)) * 4


def test_a_framed_page_unframes_to_its_payload() -> None:
    blob = frame("k1", PAYLOAD)
    assert len(blob) == HEADER_BYTES + len(PAYLOAD) and blob.startswith(MAGIC)
    payload = unframe("k1", blob, len(PAYLOAD))
    assert payload is not None and bytes(payload) == PAYLOAD


@pytest.mark.parametrize("cut", [0, 1, HEADER_BYTES - 1, HEADER_BYTES, len(PAYLOAD) // 2, 1])
def test_a_truncated_object_is_rejected(cut: int) -> None:
    blob = frame("k1", PAYLOAD)
    assert unframe("k1", blob[: len(blob) - cut - 1], len(PAYLOAD)) is None


@pytest.mark.parametrize("position", [0, 4, 12, HEADER_BYTES, HEADER_BYTES + 500, -1])
def test_one_flipped_byte_anywhere_is_rejected(position: int) -> None:
    blob = bytearray(frame("k1", PAYLOAD))
    blob[position] ^= 0x40
    assert unframe("k1", blob, len(PAYLOAD)) is None


def test_an_object_stored_under_another_key_is_rejected() -> None:
    assert unframe("k2", frame("k1", PAYLOAD), len(PAYLOAD)) is None


def test_an_object_of_another_page_size_is_rejected() -> None:
    blob = frame("k1", PAYLOAD)
    assert unframe("k1", blob, len(PAYLOAD) - 1) is None
    assert unframe("k1", blob + b"\0", len(PAYLOAD)) is None
