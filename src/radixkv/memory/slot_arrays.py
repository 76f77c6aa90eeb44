"""Validation and normalisation of slot-id arrays handed in by callers.

Every public entry point that takes slot ids runs them through :func:`as_slot_array` once, so the
rest of radixkv only ever sees contiguous 1-D ``int64`` numpy arrays of non-negative ids.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

from radixkv.errors import InvalidSlotsError, InvalidSlotsTypeError

__all__ = ["PageTable", "SlotArray", "as_slot_array", "page_table"]

SlotArray = npt.NDArray[np.int64]
"""A contiguous 1-D ``int64`` array of slot ids."""

PageTable = npt.NDArray[np.int64]
"""A read-only ``(num_pages, page_size)`` table: row ``k`` holds the slot ids of page ``k``."""

_INT64_MAX = np.iinfo(np.int64).max

_PAGE_TABLES: weakref.WeakValueDictionary[tuple[int, int], PageTable] = (
    weakref.WeakValueDictionary()
)


def page_table(num_pages: int, page_size: int) -> PageTable:
    """The :data:`PageTable` of ``num_pages`` pages of ``page_size`` slots, shared (it is
    read-only) by everyone who asks for the same shape while one of them still holds it.
    Slot ids of whole pages are then one ``take`` of rows. O(capacity) once, 8 bytes a
    slot."""
    key = (num_pages, page_size)
    table = _PAGE_TABLES.get(key)
    if table is None:
        # bench insert: a row gather is ~6x cheaper than building page slots by broadcasting
        table = np.arange(num_pages * page_size, dtype=np.int64).reshape(num_pages, page_size)
        table.flags.writeable = False
        _PAGE_TABLES[key] = table
    return table


def _is_torch_tensor(x: object) -> bool:
    # Deliberately not ``isinstance(x, torch.Tensor)``: that would import torch (slow, and
    # optional). Tensors and their subclasses live in modules named ``torch`` or ``torch.*``.
    module = type(x).__module__
    return module == "torch" or module.startswith("torch.")


def _torch_to_numpy(x: Any, what: str) -> object:
    try:
        return x.detach().cpu().numpy()
    except (AttributeError, TypeError, RuntimeError) as exc:
        raise InvalidSlotsTypeError(
            f"{what} must be a 1-D integer numpy array or torch tensor; got a "
            f"{type(x).__module__}.{type(x).__qualname__} that does not convert to numpy "
            f"({exc})"
        ) from exc


def as_slot_array(x: object, *, what: str = "slots") -> SlotArray:
    """Return ``x`` as a contiguous 1-D ``int64`` numpy array of non-negative slot ids.

    Accepts a 1-D numpy array of any signed or unsigned integer dtype, or a torch tensor of
    such a dtype (on any device; it is detached and copied to the CPU). torch is never
    imported: a tensor is recognised by its type's module name.

    Does not mutate ``x``. Returns ``x`` itself when it already is a contiguous native
    ``int64`` array (so the result may be read-only or shared with the caller: never write to
    it); otherwise one copy. Cost O(len(x)).

    ``what`` names the argument in error messages.

    Raises:
        InvalidSlotsTypeError: ``x`` is not a numpy array nor a torch tensor (a list, a tuple,
            a Python or numpy scalar, ``None``...). This is about the container only.
        InvalidSlotsError: ``x`` is an array of the right kind but with the wrong dtype (bool,
            float, complex, object, string...: anything not an integer dtype), the wrong shape
            (not exactly 1-D), or a wrong value (a negative id, or an unsigned id above
            ``2**63 - 1``).
    """
    if _is_torch_tensor(x):
        x = _torch_to_numpy(x, what)
    if not isinstance(x, np.ndarray):
        raise InvalidSlotsTypeError(
            f"{what} must be a 1-D integer numpy array or torch tensor, "
            f"got {type(x).__module__}.{type(x).__qualname__}"
        )
    kind = x.dtype.kind
    if kind not in "iu":
        raise InvalidSlotsError(f"{what} must have an integer dtype, got dtype {x.dtype}")
    if x.ndim != 1:
        raise InvalidSlotsError(f"{what} must be 1-D, got shape {x.shape}")
    if x.size:
        if kind == "i":
            lowest = int(x.argmin())  # bench insert: one C call, no temporary mask
            if x[lowest] < 0:
                position = int(np.argmax(x < 0))
                raise InvalidSlotsError(
                    f"{what}[{position}] = {int(x[position])} is negative: slot ids are >= 0"
                )
        elif x.dtype.itemsize >= 8:
            too_big = x > _INT64_MAX
            if too_big.any():
                position = int(np.argmax(too_big))
                raise InvalidSlotsError(
                    f"{what}[{position}] = {int(x[position])} is above 2**63 - 1"
                )
    return np.ascontiguousarray(x, dtype=np.int64)
