"""The vLLM KV-event wire encoding: msgpack batches ``[ts, [events...], dp_rank]``.

Events are tagged maps in vLLM's field order (``type`` first), byte-identical to what vLLM's
msgspec structs produce: BlockStored always with a map16 header (msgspec sizes the header by
the struct's 16 possible entries), BlockRemoved and AllBlocksCleared with fixmaps. Only the
required fields are written (vLLM omits optional fields that are unset). The legacy form
writes positional arrays ``[tag, field, ...]`` instead.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

import msgpack

from ..core.events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    KVEvent,
    pending_parts,
    stored_fields,
)
from ..core.keys import DEFAULT_NAMESPACE, unpack_tokens
from .publisher_config import PublisherConfig

MASK64 = (1 << 64) - 1
END_SEQUENCE = struct.pack(">q", -1)
"""Sequence frame of the replay end marker: -1 as a signed big-endian int64 (8 x 0xff)."""

# msgspec always sizes BlockStored's header as a map16: 8 entries, 9 with a cache_salt
_MAP16_8, _MAP16_9 = b"\xde\x00\x08", b"\xde\x00\x09"
_ARRAY16 = 3
"""Bytes of the array16 header msgpack gives a list of 16 to 65,535 items."""


def sequence_frame(seq: int) -> bytes:
    """The 8-byte big-endian (unsigned) sequence frame of batch ``seq``."""
    return struct.pack(">Q", seq)


def wire_hash(value: int, signed: bool) -> int:
    """A block hash as sent: radixkv's signed int64 event id, or the same 64 bits read as
    an unsigned integer (vLLM's form). Either way store and remove send the same value."""
    return value if signed else value & MASK64


class BatchEncoder:
    """Encodes event batches for one publisher configuration (not thread-safe: only the
    publisher's thread calls it).

    Each event is one msgpack call: its keys and values as one flat list, whose array
    header is swapped for the event's map header (a map's body is its keys and values in
    order, so the bytes are those of packing each key and value in turn, at a fraction of
    the calls)."""

    def __init__(self, config: PublisherConfig) -> None:
        self._config = config
        self._packer = msgpack.Packer(use_bin_type=True, autoreset=True)
        self._pack: Callable[[object], bytes] = self._packer.pack
        self._unsigned = not config.signed_hashes
        self._legacy = config.legacy_arrays
        self._media = {"GPU": config.medium_gpu, "CPU": config.medium_cpu,
                       "STORAGE": config.medium_storage}
        tag = self._pack("AllBlocksCleared")
        self._cleared: bytes = b"\x91" + tag if self._legacy else b"\x81\xa4type" + tag

    def batch(self, ts: float, events: Sequence[KVEvent], dp_rank: int) -> bytes:
        """One ``KVEventBatch``: a 3-element array of float64 ``ts``, the events, and the
        data-parallel rank. Stores and removes that carry no page are left out."""
        pack = self._pack
        encoded = [data for data in map(self.event, events) if data]  # b"": no page
        return b"".join([b"\x93", pack(float(ts)), self._packer.pack_array_header(len(encoded)),
                         *encoded, pack(dp_rank)])

    def event(self, event: KVEvent) -> bytes:
        """One event in the configured form (tagged map, or legacy positional array);
        ``b""`` for a store or remove that carries no page (nothing to send)."""
        if isinstance(event, BlockStored):
            return self._stored(event)
        if isinstance(event, BlockRemoved):
            return self._removed(event)
        if isinstance(event, AllBlocksCleared):
            return self._cleared
        raise TypeError(f"not a KV event: {event!r}")

    def _hashes(self, values: Sequence[int]) -> list[int]:
        if self._unsigned:
            return [value & MASK64 for value in values]  # wire_hash(value, False) inline
        return values if type(values) is list else list(values)

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
        raw = pending_parts(event)
        if raw is not None:
            # the tree's pending event (most stores): its ids read straight in the wire's
            # form and its tokens from the key, without computing the event's own lists
            (hasher, size, default), digests, above, key, medium, namespace = raw
            if not digests:
                return b""
            parent, hashes = hasher.ids(digests, None if above is None else above[-1],
                                        self._unsigned)
            return self._stored_map(hashes, parent, unpack_tokens(key, False), size,
                                    default if medium is None else medium, namespace)
        hashes, parent, tokens, size, medium, namespace = stored_fields(event)
        if not hashes:
            return b""
        if parent is not None and self._unsigned:
            parent &= MASK64
        return self._stored_map(self._hashes(hashes), parent,
                                tokens if type(tokens) is list else list(tokens), size, medium,
                                namespace)

    def _stored_map(self, hashes: list[int], parent: int | None, tokens: list[int], size: int,
                    medium: str, namespace: tuple[object, object]) -> bytes:
        """A BlockStored of these fields, its hashes already in the wire's form."""
        if namespace is DEFAULT_NAMESPACE:  # the cache's own, for None
            lora = salt = None
        else:
            lora, salt = self.lora_name(namespace), self.cache_salt(namespace)
        medium = self._media.get(medium, medium)
        if self._legacy:
            # vLLM's positional prefix: tag, the seven fields, extra_keys (nil); it has no
            # place for a salt.
            return self._pack(["BlockStored", hashes, parent, tokens, size, None, medium, lora,
                               None])
        fields = ["type", "BlockStored", "block_hashes", hashes,
                  "parent_block_hash", parent, "token_ids", tokens, "block_size", size,
                  "lora_id", None, "medium", medium, "lora_name", lora]
        if salt is None:
            return _MAP16_8 + self._pack(fields)[_ARRAY16:]  # 16 items: an array16 header
        # not a vLLM field: Dynamo reads it, vLLM's decoder skips it
        fields += ("cache_salt", salt)
        return _MAP16_9 + self._pack(fields)[_ARRAY16:]

    def _removed(self, event: BlockRemoved) -> bytes:
        if not event.block_hashes:
            return b""
        hashes = self._hashes(event.block_hashes)
        medium = self._media.get(event.medium, event.medium)
        if self._legacy:
            return self._pack(["BlockRemoved", hashes, medium])
        return b"\x83" + self._pack(["type", "BlockRemoved", "block_hashes", hashes,
                                      "medium", medium])[1:]  # 6 items: a fixarray header
