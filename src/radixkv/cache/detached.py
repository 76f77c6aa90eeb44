"""Slots a caller allocated outside any lease (engines with their own request bookkeeping)."""

from __future__ import annotations

import sys
from typing import NoReturn

import numpy as np

from ..errors import InvalidSlotsError
from ..memory.slot_arrays import page_table


class DetachedSlots:
    """Which pages of one pool a caller holds through ``allocate``, and in which allocation
    (its id; 0: none); O(slots) per call.

    Work is done on page ids: :meth:`check` validates slots once and returns their pages,
    which :meth:`unmark` and the pool's ``free_pages`` then take as they are.
    """

    def __init__(self, num_pages: int, page_size: int) -> None:
        self.page_size = page_size
        self._holder = np.zeros(num_pages, dtype=np.int64)
        self._stamp = np.zeros(num_pages, dtype=np.int64)  # duplicate detection in O(n)
        self._order = np.arange(num_pages, dtype=np.int64)  # sliced, never rebuilt
        self._offsets = np.arange(page_size, dtype=np.int64)
        self._rows = page_table(num_pages, page_size) if page_size > 1 else None

    def pages(self, slots: np.ndarray) -> np.ndarray:
        """Page ids of whole pages of slots (not validated)."""
        page = self.page_size
        return slots if page == 1 else slots[::page] // page

    def mark(self, pages: np.ndarray, holder: int) -> None:
        """Allocation ``holder`` (an id > 0) now holds ``pages`` (page ids)."""
        self._holder[pages] = holder

    def check(self, slots: np.ndarray, holder: int) -> np.ndarray:
        """Return the page ids of ``slots``; raise :class:`InvalidSlotsError` unless every
        slot is a whole page allocation ``holder`` holds, none twice. Pure (scratch aside).
        ``slots`` come from ``as_slot_array`` (``int64``, never negative)."""
        pages = self._accepted(slots, holder)
        if pages is None:
            self.explain(slots, holder)
        return pages

    def holder_of(self, slots: np.ndarray) -> int:
        """The allocation holding the page of ``slots[0]`` (0: none, or no such page)."""
        first = int(slots[0]) // self.page_size if len(slots) else -1
        return int(self._holder[first]) if 0 <= first < len(self._holder) else 0

    def _accepted(self, slots: np.ndarray, holder: int) -> np.ndarray | None:
        """The page ids of ``slots`` if they pass every check, else ``None``; a handful of
        whole-array numpy calls (the precise error is :meth:`explain`'s job)."""
        page, count = self.page_size, len(slots)
        if count % page:
            return None
        pages = self.pages(slots)
        k = len(pages)
        if not k:
            return pages
        try:  # a page past the pool raises IndexError
            # bench insert: one row gather and one compare of bytes check that the slots
            # are whole aligned pages (a negative page gathers a row of other ids)
            if self._rows is not None and (
                    self._rows.take(pages, axis=0).tobytes() != slots.tobytes()):
                return None
            held = self._holder.take(pages)
        except IndexError:
            return None
        # bench insert: one bytes compare proves every page is this holder's (no ufunc)
        if held.tobytes() != holder.to_bytes(8, sys.byteorder, signed=True) * k:
            return None
        order = self._order[:k]
        self._stamp[pages] = order  # a page given twice keeps only its last position
        if self._stamp.take(pages).tobytes() != order.tobytes():
            return None
        return pages

    def explain(self, slots: np.ndarray, holder: int) -> NoReturn:
        """Raise the :class:`InvalidSlotsError` that says why ``slots`` were rejected."""
        page = self.page_size
        if len(slots) % page:
            raise InvalidSlotsError(f"{len(slots)} slots are not whole pages of {page}")
        if slots.min() < 0 or slots.max() >= len(self._holder) * page:
            raise InvalidSlotsError("slot id outside the pool")
        shaped = slots.reshape(-1, page)
        if not (shaped == shaped[:, :1] + self._offsets).all() or (shaped[:, 0] % page).any():
            raise InvalidSlotsError("slots are not whole aligned pages")
        holders = self._holder[shaped[:, 0] // page]
        if not holders.all():
            raise InvalidSlotsError("slots were not allocated to the caller")
        if (holders != holder).any():
            raise InvalidSlotsError("slots are held by another allocation")
        raise InvalidSlotsError("the same slot is given twice")

    def unmark(self, pages: np.ndarray) -> None:
        """No allocation holds ``pages`` (page ids) any more."""
        self._holder[pages] = 0

    def held(self) -> np.ndarray:
        """Every slot the caller holds."""
        pages = np.flatnonzero(self._holder)
        return (pages[:, None] * self.page_size + self._offsets).ravel()

    def holders(self) -> np.ndarray:
        """Per page, the allocation holding it (0: none); read-only, for the audit."""
        view: np.ndarray = self._holder.view()
        view.flags.writeable = False
        return view

    def reset(self) -> None:
        self._holder[:] = 0
