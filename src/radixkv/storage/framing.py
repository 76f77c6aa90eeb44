"""The stored form of a page: a header that proves the bytes are whole and are this key's.

``MAGIC (4) | payload length (u64 LE) | BLAKE2b-128 of key and payload (16) | payload``. A
reader checks all three before it copies a byte into a host row, so a truncated, corrupted,
torn or misplaced object (bytes stored under another key) reads as a miss, never as data.
"""

from __future__ import annotations

import hashlib
import struct

MAGIC = b"RKV\x01"
_HEADER = struct.Struct("<4sQ16s")
HEADER_BYTES = _HEADER.size


def _checksum(key: str, payload: bytes | memoryview) -> bytes:
    hasher = hashlib.blake2b(key.encode(), digest_size=16)
    hasher.update(payload)
    return hasher.digest()


def frame(key: str, payload: bytes) -> bytes:
    """The stored object for ``payload`` under ``key``; pure, one BLAKE2b pass."""
    return _HEADER.pack(MAGIC, len(payload), _checksum(key, payload)) + payload


def unframe(key: str, blob: bytes | bytearray | memoryview, expected: int) -> memoryview | None:
    """The payload of a stored object if it is whole, is ``key``'s and holds exactly
    ``expected`` bytes, else ``None``; pure, one BLAKE2b pass."""
    view = memoryview(blob)
    if len(view) != HEADER_BYTES + expected:
        return None
    magic, length, checksum = _HEADER.unpack_from(view)
    payload = view[HEADER_BYTES:]
    if magic != MAGIC or length != expected or _checksum(key, payload) != checksum:
        return None
    return payload
