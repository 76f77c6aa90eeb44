"""What every slot pool shares: the page arithmetic of ``num_pages`` pages of ``page_size``
slots (page ``k`` is slots ``k*page_size .. k*page_size + page_size - 1``) and a scratch map
for duplicate checks. Not validated: the pools check what they are given first."""

from __future__ import annotations

import numpy as np

from radixkv.memory.slot_arrays import PageTable, SlotArray, page_table

__all__ = ["PagedSlots"]


class PagedSlots:
    """The base of :class:`~radixkv.memory.SlotPool` and :class:`~radixkv.memory.EnginePool`:
    their name, size and page arithmetic. Costs are O(slots or pages passed); building it
    O(num_pages) (and the shared page table, O(capacity), once per shape)."""

    __slots__ = ("_name", "_num_pages", "_order", "_page_size", "_rows", "_stamp")

    def __init__(self, name: str, num_pages: int, page_size: int) -> None:
        self._name, self._num_pages, self._page_size = name, num_pages, page_size
        # Row k: the slot ids of page k (shared, read-only); unused at page size 1.
        self._rows: PageTable | None = page_table(num_pages, page_size) if page_size > 1 else None
        # Scratch for O(n) duplicate detection; its contents between calls mean nothing.
        self._stamp: SlotArray = np.zeros(num_pages, dtype=np.int64)
        # Positions 0..num_pages-1, sliced (not rebuilt) for every duplicate check.
        self._order: SlotArray = np.arange(num_pages, dtype=np.int64)

    @property
    def name(self) -> str:
        return self._name

    @property
    def page_size(self) -> int:
        """Slots per page: the unit of allocation."""
        return self._page_size

    @property
    def num_pages(self) -> int:
        return self._num_pages

    @property
    def capacity(self) -> int:
        """Slots in all: ``num_pages * page_size``."""
        return self._num_pages * self._page_size

    def slots_of(self, pages: SlotArray) -> SlotArray:
        """Slot ids of the whole pages ``pages`` (page ids in range, not validated), in
        order; a fresh array, or ``pages`` itself at page size 1. O(slots)."""
        if self._rows is None:
            return pages
        slots: SlotArray = self._rows.take(pages, axis=0).reshape(-1)
        return slots

    def pages_of(self, slots: SlotArray) -> SlotArray:
        """Page ids of ``slots`` that are whole pages (as the pool hands them out); a view
        at page size 1. Not validated."""
        if self._page_size == 1:
            return slots
        pages: SlotArray = slots[:: self._page_size] // self._page_size
        return pages

    def _repeats(self, pages: SlotArray) -> bool:
        """Whether a page id occurs twice in ``pages`` (in range); O(k) via the stamp map."""
        order = self._order[: len(pages)]
        self._stamp[pages] = order  # a repeated page keeps only one of its positions
        # bench insert/release: compare as bytes, no boolean temporary
        return self._stamp.take(pages).tobytes() != order.tobytes()
