"""Allocation: slots a caller holds outside any lease, from ``allocate`` to insert/release."""

from __future__ import annotations

import enum

import numpy as np


class AllocationState(enum.Enum):
    HELD = "held"
    INSERTED = "inserted"
    RELEASED = "released"
    INVALIDATED = "invalidated"
    """The cache was reset while the caller held it."""


class Allocation:
    """Slots a caller holds outside any lease, issued by :meth:`PrefixCache.allocate`:
    ``full`` FULL slots (whole pages), ``swa`` the SWA slots of the same tokens (SWA caches)
    and ``state`` one MAMBA state slot (when asked for). The arrays are read-only.

    Like a lease, an allocation proves where it comes from: the cache accepts only the very
    object it issued (not a copy), only while ``status`` is ``HELD``; insert or release
    spends it, and using it again raises :class:`AllocationError`.
    """

    __slots__ = ("full", "id", "owner", "state", "status", "swa")

    def __init__(self, owner: object, allocation_id: int, full: np.ndarray,
                 swa: np.ndarray | None = None, state: int | None = None) -> None:
        full.flags.writeable = False  # the tree may keep views of these slots
        if swa is not None:
            swa.flags.writeable = False
        self.owner, self.id, self.full, self.swa, self.state = (
            owner, allocation_id, full, swa, state)
        self.status = AllocationState.HELD

    def __repr__(self) -> str:
        return (f"Allocation(id={self.id}, status={self.status.value}, "
                f"slots={len(self.full)}, state={self.state})")
