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

_new = object.__new__
_SET_STORED = tuple(getattr(BlockStored, name).__set__ for name in BlockStored.__slots__)


def block_stored(block_hashes: list[int], parent_block_hash: int | None,
                 token_ids: list[int], block_size: int, medium: str,
                 namespace: tuple[object, object]) -> BlockStored:
    """``BlockStored(...)`` of these fields, built at half the cost: the tree builds one per
    published node, and a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``, while this sets the slots directly (the same object results)."""
    event: BlockStored = _new(BlockStored)
    hashes, parent, tokens, size, on, space = _SET_STORED
    hashes(event, block_hashes)
    parent(event, parent_block_hash)
    tokens(event, token_ids)
    size(event, block_size)
    on(event, medium)
    space(event, namespace)
    return event
