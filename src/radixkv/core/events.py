"""KV events the tree queues for routers (published on the wire by ``radixkv.events``).

Hashes are event ids (non-zero signed int64, see :mod:`radixkv.core.hashing`). Only full pages
are ever announced; a parent page is always stored before any child that names it.

A BlockStored the tree queues (:func:`pending_stored`) is built cheaply: it keeps its node's
page digests and packed key, and computes ``block_hashes``, ``parent_block_hash`` and
``token_ids`` the first time any field is read, not while the scheduler admits and finishes
requests. Every read, comparison, repr, copy and pickle sees the same plain values as for an
event built by ``BlockStored(...)``. The wire encoder (on the publisher's thread) reads none:
it encodes what the event keeps (:func:`pending_parts`), ids in the wire's form.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .keys import unpack_tokens

if TYPE_CHECKING:
    from .hashing import PageHash


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


# A pending BlockStored: what the tree queues (see the module's docstring).

PendingStored = tuple[tuple["PageHash", int, str], list[bytes], "list[bytes] | None", bytes,
                      "str | None", tuple[object, object]]
"""What a pending BlockStored keeps: ``((hasher, block_size, default_medium), digests,
above, key, medium, namespace)`` (see :func:`pending_stored`)."""

_SLOTS = tuple(getattr(BlockStored, name) for name in BlockStored.__slots__)
"""The slots' own descriptors, in field order. A pending event holds :data:`PENDING` in
the first and its :data:`PendingStored` in the second; the others are not set yet."""
PENDING: Any = object()
"""``block_hashes`` of a pending event, as its slot holds it."""
MARK, KEEP = _SLOTS[0].__set__, _SLOTS[1].__set__
"""Set a new event's first slot (:data:`PENDING`) and second (its :data:`PendingStored`):
:func:`pending_stored` inline, for the tree's hot path."""
_IS_PENDING, _KEPT = _SLOTS[0].__get__, _SLOTS[1].__get__
_READY_LOCK = threading.Lock()
"""Taken only to compute a pending event's fields, so that two threads reading one event
for the first time both see its final values."""


def pending_stored(raw: PendingStored) -> BlockStored:
    """A BlockStored of ``raw = ((hasher, block_size, default_medium), digests, above, key,
    medium, namespace)``: a node's page ``digests``, ``above`` its parent's (``None``
    under a namespace root), ``key`` its packed tokens (little-endian u32, no bigrams),
    ``medium`` (``None``: ``default_medium``). Its fields are computed at the first read of
    any of them: ``hasher.ids(digests, above[-1])`` gives the parent's and the pages' ids;
    the digest lists must not be mutated meanwhile (the tree replaces a node's list, never
    changes one). O(1): the object and two slots."""
    event: BlockStored = _new(BlockStored)
    MARK(event, PENDING)
    KEEP(event, raw)
    return event


def is_pending(event: KVEvent) -> bool:
    """Whether ``event`` is a BlockStored whose fields are not computed yet. O(1)."""
    return type(event) is BlockStored and _IS_PENDING(event, BlockStored) is PENDING


def has_pages(event: BlockStored | BlockRemoved) -> bool:
    """Whether ``event`` names at least one page, without computing a pending event's
    fields (a publisher filters events on the scheduler thread and encodes them on its
    own). O(1)."""
    if type(event) is BlockStored and _IS_PENDING(event, BlockStored) is PENDING:
        return bool(_KEPT(event, BlockStored)[1])
    return bool(event.block_hashes)


def pending_parts(event: BlockStored) -> PendingStored | None:
    """What a pending ``event`` keeps (see :func:`pending_stored`), or ``None`` once its
    fields are computed or for an event built by its constructor. Computes nothing: an
    encoder reads the ids in the form it sends (``hasher.ids(..., unsigned=True)``) and the
    tokens from the key without building the event's lists first. O(1), any thread."""
    if _IS_PENDING(event, BlockStored) is PENDING:
        raw = _KEPT(event, BlockStored)
        if type(raw) is tuple:  # else another thread computed the fields since the test
            return raw
    return None


def stored_fields(event: BlockStored) -> tuple[list[int], int | None, list[int], int, str,
                                                tuple[object, object]]:
    """Every field of ``event`` in field order, a pending one's computed first: one Python
    call where six reads cost six (a field read goes through this module's descriptor)."""
    if _IS_PENDING(event, BlockStored) is PENDING:
        _make_ready(event)
    return _READ_ALL(event)


def _make_ready(event: BlockStored) -> None:
    with _READY_LOCK:
        hashes, parent, tokens, size, medium, namespace = _SLOTS
        if hashes.__get__(event, BlockStored) is not PENDING:
            return  # another thread did it
        context, digests, above, key, on, space = parent.__get__(event, BlockStored)
        hasher, block_size, default = context
        parent_id, ids = hasher.ids(digests, None if above is None else above[-1])
        tokens.__set__(event, unpack_tokens(key, False))
        size.__set__(event, block_size)
        medium.__set__(event, default if on is None else on)
        namespace.__set__(event, space)
        parent.__set__(event, parent_id)
        hashes.__set__(event, ids)  # last: a set ``block_hashes`` says every field is


class _Field:
    """A data descriptor over a BlockStored slot that computes a pending event's fields at
    the first read of any of them; any BlockStored's read costs a Python call and a test
    more than a plain slot's."""

    __slots__ = ("slot",)

    def __init__(self, slot: Any) -> None:
        self.slot = slot

    def __get__(self, event: BlockStored | None, owner: type | None = None) -> Any:
        if event is None:
            return self
        if _IS_PENDING(event, owner) is PENDING:
            _make_ready(event)
        return self.slot.__get__(event, owner)

    def __set__(self, event: BlockStored, value: object) -> None:
        self.slot.__set__(event, value)


def _read_all(event: BlockStored) -> tuple[Any, ...]:
    hashes, parent, tokens, size, medium, namespace = _GETTERS
    return (hashes(event, BlockStored), parent(event, BlockStored), tokens(event, BlockStored),
            size(event, BlockStored), medium(event, BlockStored), namespace(event, BlockStored))


_GETTERS = tuple(slot.__get__ for slot in _SLOTS)
_READ_ALL = _read_all
for _slot in _SLOTS:  # every field: a pending event has only its first two slots set
    setattr(BlockStored, _slot.__name__, _Field(_slot))
