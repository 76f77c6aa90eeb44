"""KV events the tree queues for routers (published on the wire by ``radixkv.events``).

Hashes are event ids (non-zero signed int64, see :mod:`radixkv.core.hashing`). Only full pages
are ever announced; a parent page is always stored before any child that names it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BlockStored:
    """Pages newly held on ``medium``, in chain order; ``parent_block_hash`` is ``None`` at
    the start of a namespace. ``token_ids`` spans exactly ``len(block_hashes)`` pages."""

    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    medium: str
    namespace: tuple[object, object]


@dataclass(frozen=True, slots=True)
class BlockRemoved:
    """Pages no longer held on ``medium``; the same ids they were stored with."""

    block_hashes: list[int]
    medium: str
    namespace: tuple[object, object]


@dataclass(frozen=True, slots=True)
class AllBlocksCleared:
    """Everything is gone (start-up or ``reset()``)."""


KVEvent = BlockStored | BlockRemoved | AllBlocksCleared
