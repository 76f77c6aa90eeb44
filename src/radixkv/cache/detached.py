"""Slots a caller allocated outside any lease (engines with their own request bookkeeping)."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidSlotsError


class DetachedSlots:
    """Which pages of one pool a caller holds through ``allocate``; O(slots) per call."""

    def __init__(self, num_pages: int, page_size: int) -> None:
        self.page_size = page_size
        self._held = np.zeros(num_pages, dtype=bool)
        self._stamp = np.zeros(num_pages, dtype=np.int64)  # duplicate detection in O(n)

    def pages(self, slots: np.ndarray) -> np.ndarray:
        return slots[:: self.page_size] // self.page_size

    def mark(self, slots: np.ndarray) -> None:
        self._held[self.pages(slots)] = True

    def check(self, slots: np.ndarray) -> None:
        """Raise :class:`InvalidSlotsError` unless every slot is a whole page the caller
        holds; pure."""
        page = self.page_size
        if len(slots) % page:
            raise InvalidSlotsError(f"{len(slots)} slots are not whole pages of {page}")
        if len(slots) == 0:
            return
        if slots.min() < 0 or slots.max() >= len(self._held) * page:
            raise InvalidSlotsError("slot id outside the pool")
        shaped = slots.reshape(-1, page)
        if not (shaped == shaped[:, :1] + np.arange(page)).all() or (shaped[:, 0] % page).any():
            raise InvalidSlotsError("slots are not whole aligned pages")
        pages = shaped[:, 0] // page
        if not self._held[pages].all():
            raise InvalidSlotsError("slots were not allocated to the caller")
        order = np.arange(len(pages))
        self._stamp[pages] = order  # a page given twice keeps only its last position
        if not (self._stamp[pages] == order).all():
            raise InvalidSlotsError("the same slot is given twice")

    def unmark(self, slots: np.ndarray) -> None:
        self._held[self.pages(slots)] = False

    def held(self) -> np.ndarray:
        """Every slot the caller holds."""
        pages = np.flatnonzero(self._held)
        return (pages[:, None] * self.page_size + np.arange(self.page_size)).ravel()

    def reset(self) -> None:
        self._held[:] = False
