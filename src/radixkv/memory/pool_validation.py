"""Validation of the slots a caller gives back to a SlotPool: in range, whole aligned pages,
none twice, every page allocated; each error names the first offending slot and why.
Read-only but for the pool's scratch map; O(len(slots))."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from radixkv.errors import InvalidSlotsError
from radixkv.memory.slot_arrays import SlotArray

if TYPE_CHECKING:
    from radixkv.memory.slot_pool import SlotPool


def check_in_range(pool: SlotPool, arr: SlotArray, what: str) -> None:
    """Raise :class:`InvalidSlotsError` naming the first id of ``arr`` past the pool."""
    if not arr.size:
        return
    too_big = arr >= pool.capacity
    if too_big.any():
        i = int(np.argmax(too_big))
        ids = f"slots 0..{pool.capacity - 1}" if pool.capacity else "no slots"
        raise InvalidSlotsError(
            f"{pool._label()}: {what}[{i}] = {int(arr[i])} is a foreign slot: this pool "
            f"has {ids}"
        )


def whole_pages(pool: SlotPool, arr: SlotArray, action: str) -> SlotArray:
    """Validate that ``arr`` is distinct, allocated, whole pages of ``pool``; return their
    page ids (the body of :meth:`SlotPool.free`'s checks). Pure but for the scratch map."""
    p = pool._page_size
    check_in_range(pool, arr, "slots")
    n = arr.size
    if n % p:
        raise InvalidSlotsError(
            f"{pool._label()}: cannot {action} {n} slots: not a whole number of pages "
            f"(page_size {p}); partial page at slots[{n - n % p}:{n}]"
        )
    if p == 1:
        pages = arr
    else:
        grid = arr.reshape(-1, p)
        starts = grid[:, 0]
        misaligned = starts % p != 0
        broken = (grid != starts[:, None] + pool._page_offsets).any(axis=1)
        bad_rows = misaligned | broken
        if bad_rows.any():
            row = int(np.argmax(bad_rows))
            if misaligned[row]:
                i = row * p
                why = f"does not start a page (pages start at multiples of {p})"
            else:
                j = int(np.argmax(grid[row] != starts[row] + pool._page_offsets))
                i = row * p + j
                why = f"should be {int(starts[row]) + j} to continue page {starts[row] // p}"
            raise InvalidSlotsError(
                f"{pool._label()}: cannot {action} a partial page: slots[{i}] = "
                f"{int(arr[i])} {why}; slots[{row * p}:{row * p + p}] must be one whole "
                "page as alloc() returned it"
            )
        pages = starts // p
    k = pages.size
    if k == 0:
        return pages
    # Duplicates in O(k): stamp each page with its position; a position whose stamp was
    # overwritten shares its page with another one. (Which duplicate's write survives does
    # not matter: only one position per page can read back its own index.)
    order = np.arange(k, dtype=np.int64)
    pool._stamp[pages] = order
    survivors = pool._stamp[pages]
    repeated = survivors != order
    if repeated.any():
        i = int(np.argmax(repeated))
        j = int(survivors[i])
        page = int(pages[i])
        what = f"slot {page}"
        if p > 1:
            what = f"page {page} (slots {page * p}..{page * p + p - 1})"
        raise InvalidSlotsError(
            f"{pool._label()}: cannot {action} {what} twice in one call: it is at "
            f"slots[{i * p}] and slots[{j * p}]"
        )
    not_allocated = ~pool._allocated[pages]
    if not_allocated.any():
        i = int(np.argmax(not_allocated))
        page = int(pages[i])
        if page < pool._handed_out:  # allocated once since the reset (see SlotPool)
            why = "it is already free (double free)"
        else:
            why = "it was never allocated"
        raise InvalidSlotsError(
            f"{pool._label()}: cannot {action} slots[{i * p}] = {int(arr[i * p])}: {why}"
        )
    return pages
