"""Allocation: slots a caller holds outside any lease, from ``allocate`` to insert/release."""

from __future__ import annotations

import enum

import numpy as np

from ..errors import InvalidArgumentError
from .results import PRIMARY


class AllocationState(enum.Enum):
    HELD = "held"
    INSERTED = "inserted"
    RELEASED = "released"
    INVALIDATED = "invalidated"
    """The cache was reset while the caller held it."""


class Allocation:
    """Slots a caller holds outside any lease, issued by :meth:`PrefixCache.allocate`, per
    component in the cache's order (``parts``, read-only arrays): the slots of every
    per-token component for the same tokens (whole pages) and, for a state component, its
    state slot (empty unless asked for). ``of(name)`` reads one component's slots; ``full``,
    ``swa`` (``None`` without SWA) and ``state`` (the state slot or ``None``) are
    shorthands.

    Like a lease, an allocation proves where it comes from: the cache accepts only the very
    object it issued (not a copy), only while ``status`` is ``HELD``; insert or release
    spends it, and using it again raises :class:`AllocationError`. Its slots cannot change
    after issue (``parts`` cannot be reassigned, and its arrays lie over immutable
    buffers), so the cache need not check again that an issued allocation holds them.
    """

    __slots__ = ("_pages", "_parts", "_state", "id", "names", "owner", "status")

    def __init__(self, owner: object, allocation_id: int, parts: tuple[np.ndarray, ...],
                 names: tuple[str, ...], state_index: int | None,
                 pages: tuple[np.ndarray, ...] | None = None) -> None:
        self.owner, self.id, self.names = owner, allocation_id, names
        # Copies over immutable bytes: read-only for good (the writeable flag of an array
        # over bytes cannot be set again, unlike one that owns its memory), so the tree may
        # keep views of them and the cache trusts an issued allocation's slots.
        # bench insert (short, p1): a dtype object halves frombuffer (0.56 -> 0.24 us)
        self._parts = tuple([np.frombuffer(part.tobytes(), part.dtype) for part in parts])
        self._pages = pages
        """Per component, the page ids of ``parts`` (cache-internal; ``None`` when made by
        hand, in which case no cache ever issued it)."""
        self._state = state_index
        self.status = AllocationState.HELD

    @property
    def parts(self) -> tuple[np.ndarray, ...]:
        """Per component, its slots (read-only)."""
        return self._parts

    def of(self, name: str) -> np.ndarray:
        """The slots of component ``name``; :class:`InvalidArgumentError` if none."""
        if name not in self.names:
            raise InvalidArgumentError(f"this allocation has no component {name!r}")
        return self._parts[self.names.index(name)]

    @property
    def full(self) -> np.ndarray:
        return self._parts[PRIMARY]

    @property
    def swa(self) -> np.ndarray | None:
        return self.of("swa") if "swa" in self.names else None

    @property
    def state(self) -> int | None:
        if self._state is None or not len(self._parts[self._state]):
            return None
        return int(self._parts[self._state][0])

    def __repr__(self) -> str:
        return (f"Allocation(id={self.id}, status={self.status.value}, "
                f"slots={len(self.full)}, state={self.state})")
