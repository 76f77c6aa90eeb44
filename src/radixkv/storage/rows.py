"""Where a batch of pages lives in host memory: rows of one buffer, a fixed number a page."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError, InvalidSlotsError, InvalidSlotsTypeError


@dataclass(frozen=True)
class PageRows:
    """Page ``i`` of a batch is ``buffer[slots[i]]``: ``buffer`` is a numpy array whose first
    axis is slots (a host tier buffer of a ``NumpyCopyEngine``, say) and ``slots`` a 2-D
    integer array, one row of slot indices a page (``page_size`` for FULL and SWA pages, one
    for a MAMBA state); a 1-D ``slots`` means one slot a page. Reading copies the rows once;
    writing touches only the rows of pages that arrived whole. Raises
    :class:`InvalidSlotsTypeError` / :class:`InvalidSlotsError` for a bad buffer or slots.
    """

    buffer: np.ndarray
    slots: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.buffer, np.ndarray) or not isinstance(self.slots, np.ndarray):
            raise InvalidSlotsTypeError("PageRows takes a numpy buffer and a numpy slot array")
        if self.buffer.ndim < 1 or self.slots.dtype.kind not in "iu":
            raise InvalidSlotsError("PageRows needs a buffer with a slot axis and integer slots")
        slots = self.slots.reshape(-1, 1) if self.slots.ndim == 1 else self.slots
        if slots.ndim != 2 or slots.shape[1] == 0:
            raise InvalidSlotsError(f"PageRows slots must be (pages, rows), got {self.slots.shape}")
        if slots.size and (int(slots.min()) < 0 or int(slots.max()) >= len(self.buffer)):
            raise InvalidSlotsError(f"PageRows slots must lie in [0, {len(self.buffer)})")
        object.__setattr__(self, "slots", slots.astype(np.intp, copy=False))

    @property
    def pages(self) -> int:
        """How many pages the batch holds."""
        return int(self.slots.shape[0])

    @property
    def page_bytes(self) -> int:
        """Bytes of one page: its rows times the bytes of one slot's row."""
        return int(self.slots.shape[1]) * int(self.buffer[:1].nbytes)

    def read(self, page: int) -> bytes:
        """The bytes of page ``page`` (a copy of its rows, in slot order)."""
        page_rows: np.ndarray = self.buffer[self.slots[page]]
        return page_rows.tobytes()

    def write(self, page: int, payload: memoryview) -> None:
        """Store ``payload`` (exactly :attr:`page_bytes`) into page ``page``'s rows."""
        rows = np.frombuffer(payload, dtype=self.buffer.dtype)
        self.buffer[self.slots[page]] = rows.reshape((-1, *self.buffer.shape[1:]))

    def check_keys(self, count: int, writing: bool = False) -> None:
        """Raise :class:`InvalidArgumentError` unless the batch has ``count`` pages, and
        :class:`InvalidSlotsError` if ``writing`` into a read-only buffer."""
        if count != self.pages:
            raise InvalidArgumentError(f"{count} keys for {self.pages} pages of rows")
        if writing and not self.buffer.flags.writeable:
            raise InvalidSlotsError("get_into needs a writable buffer")
