"""Engine-owned slots: the engine's own KV allocator stands where radixkv's SlotPool would.

An engine owns its KV memory and its allocator; the tree then stores the engine's own KV
indices, and every index the cache gives up goes back to the engine's allocator exactly once.
The engine implements the small :class:`SlotAllocator` protocol over its allocator, and
``PrefixCache(config, allocators={"full": allocator})`` builds its FULL pool as an
:class:`EnginePool` over it: no second, shadow pool exists.

The allocator is the engine's code, hence untrusted: what it returns is checked before the
cache uses it (a bad answer raises :class:`EngineError` and changes nothing), and what it
raises while taking slots back is counted (``faults``), never let through half-way: by then the
cache has already let go of the slots, and stays consistent.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from radixkv.errors import ConfigError, EngineError, InvalidSlotsError, InvariantError
from radixkv.memory.pages import PagedSlots
from radixkv.memory.slot_arrays import SlotArray, as_slot_array

__all__ = ["EnginePool", "SlotAllocator"]

BoolArray = npt.NDArray[np.bool_]


@runtime_checkable
class SlotAllocator(Protocol):
    """What an engine's KV allocator must offer to be a cache's pool.

    Slot ids are ``0 .. capacity-1``, handed out and taken back in whole aligned pages:
    page ``k`` is slots ``k*page_size .. k*page_size + page_size - 1``. An id the engine never
    hands out (a padding slot) simply never appears. Single-threaded, like the cache.
    """

    @property
    def page_size(self) -> int:
        """Slots per page."""

    @property
    def capacity(self) -> int:
        """Size of the slot id space (a multiple of ``page_size``)."""

    @property
    def available(self) -> int:
        """Slots free in the engine right now."""

    def alloc(self, num_slots: int) -> object:
        """``num_slots`` (a multiple of ``page_size``) free slots as whole aligned pages (a
        1-D integer numpy array or torch tensor), or ``None`` when fewer are free."""

    def free(self, slots: SlotArray) -> None:
        """Take back ``slots``: whole aligned pages, each allocated, none given twice."""


class EnginePool(PagedSlots):
    """A cache's pool over an engine's :class:`SlotAllocator`; same interface as
    :class:`~radixkv.memory.SlotPool` (page ids in, page ids out), plus :meth:`adopt_pages`
    for slots the engine allocated itself and hands to the tree.

    It keeps one bit per page: whether the cache holds the page (the tree, a request's
    lease or an allocation the cache issued). That bit is what makes every release exact:
    a page goes back to the engine only when the cache holds it, and then it no longer does.
    Costs are O(pages passed) numpy work; ``check``, ``reset``, ``snapshot`` O(capacity).
    """

    __slots__ = ("_allocator", "_held", "faults", "last_fault")

    def __init__(self, allocator: SlotAllocator, name: str) -> None:
        """Raises :class:`ConfigError` when ``allocator`` lacks the protocol or declares a
        page size or capacity that is not a positive int (capacity whole pages)."""
        if not isinstance(allocator, SlotAllocator):
            raise ConfigError(f"{name}: {type(allocator).__name__} is not a SlotAllocator "
                              "(page_size, capacity, available, alloc, free)")
        page, capacity = allocator.page_size, allocator.capacity
        for what, value in (("page_size", page), ("capacity", capacity)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name}: the allocator's {what} must be an int > 0, "
                                  f"got {value!r}")
        if capacity % page:
            raise ConfigError(f"{name}: the allocator's capacity {capacity} is not a whole "
                              f"number of pages of {page}")
        super().__init__(name, capacity // page, page)
        self._allocator = allocator
        self._held: BoolArray = np.zeros(self._num_pages, dtype=np.bool_)
        self.faults = 0
        """Calls to the allocator's ``free`` that raised (the slots were let go anyway)."""
        self.last_fault: str | None = None

    # ------------------------------------------------------------------ the pool's interface

    @property
    def available(self) -> int:
        """The engine's free slots. Raises :class:`EngineError` for an answer that is not
        an int in ``[0, capacity]``."""
        free = self._allocator.available
        if (type(free) is not int and not isinstance(free, np.integer)) \
                or not 0 <= free <= self.capacity:
            raise EngineError(f"{self._name}: the allocator says {free!r} slots are free")
        return int(free)

    def alloc_pages(self, num_pages: int) -> SlotArray | None:
        """Ask the engine for ``num_pages`` pages; their page ids, or ``None`` when it is
        short. Raises :class:`EngineError` (nothing held) when the engine's answer is not
        that many distinct whole pages that the cache does not hold already."""
        if num_pages == 0:
            return np.empty(0, dtype=np.int64)
        answer = self._allocator.alloc(num_pages * self._page_size)
        if answer is None:
            return None
        try:
            slots = as_slot_array(answer, what="alloc()")
            if len(slots) != num_pages * self._page_size:
                raise InvalidSlotsError(f"{len(slots)} slots for {num_pages} pages")
            pages = self.foreign_pages(slots)
        except (InvalidSlotsError, TypeError) as exc:
            raise EngineError(f"{self._name}: the allocator's alloc() answered with slots "
                              f"the cache cannot take: {exc}") from exc
        self._held[pages] = True
        return pages

    def foreign_pages(self, slots: SlotArray) -> SlotArray:
        """Page ids of ``slots``, whole pages the engine allocated outside the cache. Raises
        :class:`InvalidSlotsError` unless they are in range, whole aligned pages, distinct
        and not held by the cache. Pure (scratch aside)."""
        pages = self._whole_pages(slots)
        if len(pages) and (self._held.take(pages).any() or self._repeats(pages)):
            raise InvalidSlotsError(f"{self._name}: slots the cache already holds, or a "
                                    "page given twice")
        return pages

    def adopt_pages(self, slots: SlotArray) -> SlotArray:
        """The cache now holds ``slots`` (as :meth:`foreign_pages` checks them); their page
        ids. Raises as :meth:`foreign_pages` does, nothing changed."""
        pages = self.foreign_pages(slots)
        self.hold(pages)
        return pages

    def hold(self, pages: SlotArray) -> None:
        """The cache now holds ``pages``, page ids :meth:`foreign_pages` returned (not
        checked again); O(pages)."""
        self._held[pages] = True

    def free_pages(self, pages: SlotArray, distinct: bool = False) -> None:
        """Give pages the cache holds back to the engine, once. Raises
        :class:`InvariantError` (nothing changed) for a page the cache does not hold or
        that is given twice; an exception from the engine's ``free`` is counted, not
        raised (the cache has let go of the pages either way)."""
        if not len(pages):
            return
        if not self._held.take(pages).all() or (not distinct and self._repeats(pages)):
            raise InvariantError(f"{self._name}: free_pages given a page the cache does "
                                 "not hold")
        self._held[pages] = False
        self._give_back(self.slots_of(pages))

    def free(self, slots: object) -> None:
        """Give back ``slots``, whole pages the cache holds, once. Raises
        :class:`InvalidSlotsError` (nothing changed) for anything else."""
        pages = self._whole_pages(as_slot_array(slots))
        if not self._held.take(pages).all() or self._repeats(pages):
            raise InvalidSlotsError(f"{self._name}: free given a page the cache does not "
                                    "hold, or a page twice")
        self._held[pages] = False
        self._give_back(self.slots_of(pages))

    def reset(self) -> None:
        """Give every page the cache holds back to the engine (one ``free`` call)."""
        pages = np.flatnonzero(self._held).astype(np.int64)
        self._held[:] = False
        if len(pages):
            self._give_back(self.slots_of(pages))

    def is_allocated(self, slots: object) -> BoolArray:
        """Per slot, whether the cache holds its page."""
        arr = as_slot_array(slots)
        held: BoolArray = self._held[arr // self._page_size]
        return held

    def check(self, held: object) -> None:
        """Raise :class:`InvariantError` unless ``held`` (every slot the cache's owners
        hold) is distinct whole pages, exactly the pages the cache holds; O(capacity)."""
        arr = as_slot_array(held, what="held")
        try:
            pages = self._whole_pages(arr) if len(arr) else arr
        except InvalidSlotsError as exc:
            raise InvariantError(f"{self._name}: {exc}") from exc
        counts = np.bincount(pages, minlength=self._num_pages)
        if (counts > 1).any():
            raise InvariantError(f"{self._name}: page {int(np.argmax(counts > 1))} is held "
                                 "twice")
        wrong = (counts == 1) != self._held
        if wrong.any():
            page = int(np.argmax(wrong))
            why = "leaked (held by nobody)" if self._held[page] else "used but not held"
            raise InvariantError(f"{self._name}: page {page} is {why}")

    def snapshot(self) -> tuple[int, int, bytes]:
        """``(capacity, page_size, held-page map)``: the pool's own observable state."""
        return (self.capacity, self._page_size, self._held.tobytes())

    def __repr__(self) -> str:
        return (f"EnginePool(name={self._name!r}, capacity={self.capacity}, "
                f"page_size={self._page_size}, held={int(self._held.sum()) * self._page_size})")

    # ------------------------------------------------------------------ internals

    def _give_back(self, slots: SlotArray) -> None:
        try:
            self._allocator.free(slots)
        except Exception as exc:  # the engine's code: counted, not raised
            self.faults += 1
            self.last_fault = f"{type(exc).__name__}: {exc}"

    def _whole_pages(self, slots: SlotArray) -> SlotArray:
        page = self._page_size
        if len(slots) % page or (len(slots) and int(slots.max()) >= self.capacity):
            raise InvalidSlotsError(f"{self._name}: {len(slots)} slots are not whole pages "
                                    f"of {page} within {self.capacity} slots")
        pages = self.pages_of(slots)
        if self._rows is not None and \
                self._rows.take(pages, axis=0).tobytes() != slots.tobytes():
            raise InvalidSlotsError(f"{self._name}: slots are not whole aligned pages")
        return pages
