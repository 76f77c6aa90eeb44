"""The vLLM KV-event wire encoding: msgpack batches ``[ts, [events...], dp_rank]``.

Events are tagged maps in vLLM's field order (``type`` first), byte-identical to what vLLM's
msgspec structs produce: BlockStored always with a map16 header (msgspec sizes the header by
the struct's 16 possible entries), BlockRemoved and AllBlocksCleared with fixmaps. Only the
required fields are written (vLLM omits optional fields that are unset). The legacy form
writes positional arrays ``[tag, field, ...]`` instead.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import msgpack

from ..core.events import AllBlocksCleared, BlockRemoved, BlockStored, KVEvent, stored_fields
from .publisher_config import PublisherConfig

MASK64 = (1 << 64) - 1
END_SEQUENCE = struct.pack(">q", -1)
"""Sequence frame of the replay end marker: -1 as a signed big-endian int64 (8 x 0xff)."""

_MAP16 = b"\xde\x00"  # msgspec always sizes BlockStored's header as a map16


def sequence_frame(seq: int) -> bytes:
    """The 8-byte big-endian (unsigned) sequence frame of batch ``seq``."""
    return struct.pack(">Q", seq)


def wire_hash(value: int, signed: bool) -> int:
    """A block hash as sent: radixkv's signed int64 event id, or the same 64 bits read as
    an unsigned integer (vLLM's form). Either way store and remove send the same value."""
    return value if signed else value & MASK64


class BatchEncoder:
    """Encodes event batches for one publisher configuration (not thread-safe: the
    publisher calls it under its lock)."""

    def __init__(self, config: PublisherConfig) -> None:
        self._config = config
        self._packer = msgpack.Packer(use_bin_type=True, autoreset=True)

    def batch(self, ts: float, events: Sequence[KVEvent], dp_rank: int) -> bytes:
        """One ``KVEventBatch``: a 3-element array of float64 ``ts``, the events, and the
        data-parallel rank."""
        pack = self._packer.pack
        parts = [b"\x93", pack(float(ts)), self._packer.pack_array_header(len(events))]
        parts.extend(self.event(event) for event in events)
        parts.append(pack(dp_rank))
        return b"".join(parts)

    def event(self, event: KVEvent) -> bytes:
        """One event in the configured form (tagged map, or legacy positional array)."""
        if isinstance(event, BlockStored):
            return self._stored(event)
        if isinstance(event, BlockRemoved):
            return self._removed(event)
        if isinstance(event, AllBlocksCleared):
            tag: bytes = self._packer.pack("AllBlocksCleared")
            if self._config.legacy_arrays:
                return b"\x91" + tag
            return b"\x81\xa4type" + tag
        raise TypeError(f"not a KV event: {event!r}")

    def _hashes(self, values: Sequence[int]) -> list[int]:
        signed = self._config.signed_hashes
        return [wire_hash(value, signed) for value in values]

    def lora_name(self, namespace: tuple[object, object]) -> str | None:
        """The adapter name published for ``namespace`` (its ``extra_key`` when a str)."""
        extra_key = namespace[0]
        if self._config.lora_from_extra_key and isinstance(extra_key, str):
            return extra_key
        return None

    def cache_salt(self, namespace: tuple[object, object]) -> str | None:
        """The ``cache_salt`` published for ``namespace``: whatever of it ``lora_name`` does
        not carry. A str salt alone goes as itself; anything else (an int salt, an
        ``extra_key`` that is not the adapter name) as ``radixkv:{extra_key!r}:{salt!r}``;
        the default namespace, or an adapter without a salt, as none."""
        extra_key, salt = namespace
        rest = None if self.lora_name(namespace) is not None else extra_key
        if rest is None and (salt is None or isinstance(salt, str)):
            return salt
        return f"radixkv:{rest!r}:{salt!r}"

    def _stored(self, event: BlockStored) -> bytes:
        config = self._config
        # one call for the six fields (a pending event's computed here, on this thread)
        hashes, parent, tokens, size, medium, namespace = stored_fields(event)
        fields: list[tuple[str, object]] = [
            ("block_hashes", self._hashes(hashes)),
            ("parent_block_hash",
             None if parent is None else wire_hash(parent, config.signed_hashes)),
            ("token_ids", list(tokens)),
            ("block_size", size),
            ("lora_id", None),
            ("medium", config.wire_medium(medium)),
            ("lora_name", self.lora_name(namespace)),
        ]
        if config.legacy_arrays:
            # vLLM's positional prefix: tag, the seven fields above, extra_keys (nil); it
            # has no place for a salt.
            fields.append(("extra_keys", None))
            return self._array("BlockStored", fields)
        salt = self.cache_salt(namespace)
        if salt is not None:  # not a vLLM field: Dynamo reads it, vLLM's decoder skips it
            fields.append(("cache_salt", salt))
        return self._map(_MAP16 + bytes([len(fields) + 1]), "BlockStored", fields)

    def _removed(self, event: BlockRemoved) -> bytes:
        fields: list[tuple[str, object]] = [
            ("block_hashes", self._hashes(event.block_hashes)),
            ("medium", self._config.wire_medium(event.medium)),
        ]
        if self._config.legacy_arrays:
            return self._array("BlockRemoved", fields)
        return self._map(b"\x83", "BlockRemoved", fields)

    def _map(self, header: bytes, tag: str, fields: list[tuple[str, object]]) -> bytes:
        pack = self._packer.pack
        parts = [header, pack("type"), pack(tag)]
        for key, value in fields:
            parts.append(pack(key))
            parts.append(pack(value))
        return b"".join(parts)

    def _array(self, tag: str, fields: list[tuple[str, object]]) -> bytes:
        pack = self._packer.pack
        parts = [self._packer.pack_array_header(len(fields) + 1), pack(tag)]
        parts.extend(pack(value) for _, value in fields)
        return b"".join(parts)
