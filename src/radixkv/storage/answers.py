"""What a store's raw calls may answer, checked before the backend believes a word of it.

A store's raw calls (``StorageBackend._exists``, ``_read``, ``_write``, ``_classify``) are
code written against the store's client, so their answers are untrusted: an answer of the
wrong type or length is a fault of the whole batch (kind ``error``), and an item of a kind
the contract does not know is a fault of that page alone. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .backend_stats import FAULTS

Blob = bytes | bytearray | memoryview
"""A stored object as a read may return it."""


def presence(answer: object, count: int) -> list[bool] | None:
    """``answer`` as ``count`` presence flags, or ``None`` unless it is a list (or tuple) of
    exactly ``count`` bools (numpy bools included)."""
    if not _sized(answer, count):
        return None
    assert isinstance(answer, (list, tuple))
    if not all(isinstance(flag, (bool, np.bool_)) for flag in answer):
        return None
    return [bool(flag) for flag in answer]


def objects(answer: object, count: int) -> Sequence[object] | None:
    """``answer`` as ``count`` per-key read results (each checked by :func:`read_item`),
    or ``None`` unless it is a list (or tuple) of that length."""
    return answer if _sized(answer, count) else None  # type: ignore[return-value]


def read_item(item: object) -> Blob | str:
    """One key's read result: the object's bytes, else the fault kind it amounts to
    (``None``: the key is gone, ``missing``; a kind of :data:`FAULTS`: itself; anything
    else: ``error``)."""
    if isinstance(item, (bytes, bytearray)):
        return item
    if isinstance(item, memoryview):  # as bytes: a view of other items or strides is none
        return item.cast("B") if item.c_contiguous else "error"
    if item is None:
        return "missing"
    return fault_kind(item)


def write_outcome(answer: object, count: int) -> list[str | None] | None:
    """``answer`` as ``count`` per-key put results (``None``: stored, else a fault kind;
    an item that is neither is ``error``: not stored), or ``None`` unless it is a list (or
    tuple) of that length."""
    if not _sized(answer, count):
        return None
    assert isinstance(answer, (list, tuple))
    return [None if item is None else fault_kind(item) for item in answer]


def fault_kind(value: object) -> str:
    """``value`` if it names a fault kind of :data:`FAULTS`, else ``error``."""
    return value if isinstance(value, str) and value in FAULTS else "error"


def _sized(answer: object, count: int) -> bool:
    return isinstance(answer, (list, tuple)) and len(answer) == count
