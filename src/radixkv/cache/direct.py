"""The caller-held path: engines that keep their own request records allocate slots, run the
model, then hand tokens and slots to the tree in one insert (the shape of SGLang's API)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConfigError, InvalidSlotsError
from ..memory import as_slot_array
from .base import CacheBase, _check_int
from .results import PRIMARY


class Allocation:
    """Slots a caller holds outside any lease, per component in the cache's order
    (``parts``): the slots of every per-token component for the same tokens (whole pages),
    and for a state component its state slot (an empty array unless asked for).
    ``full``, ``swa`` and ``state`` are shorthands (``swa`` is ``None`` without SWA)."""

    __slots__ = ("_state", "names", "parts")

    def __init__(self, parts: tuple[np.ndarray, ...], names: tuple[str, ...],
                 state_index: int | None = None) -> None:
        self.parts, self.names, self._state = parts, names, state_index

    def of(self, name: str) -> np.ndarray:
        """The slots of component ``name``."""
        return self.parts[self.names.index(name)]

    @property
    def full(self) -> np.ndarray:
        return self.parts[PRIMARY]

    @property
    def swa(self) -> np.ndarray | None:
        return self.of("swa") if "swa" in self.names else None

    @property
    def state(self) -> int | None:
        """The state slot, if one was allocated."""
        if self._state is None or not len(self.parts[self._state]):
            return None
        return int(self.parts[self._state][0])


class Direct(CacheBase):
    """allocate → (run the model) → insert, or release."""

    def allocate(
        self, num_tokens: int, *, state: bool = False, evict: bool = True
    ) -> Allocation | None:
        """Allocate slots for ``num_tokens`` tokens (whole pages, in every per-token
        component) and, with ``state``, a state slot (MAMBA). Evicts as needed, or with
        ``evict=False`` returns ``None`` when the pools are short. Raises
        :class:`OutOfSlotsError` (nothing changed) when even eviction cannot make room. The
        caller holds the slots until it passes them to :meth:`insert` or :meth:`release`."""
        _check_int("num_tokens", num_tokens, minimum=0)
        if state and self._state is None:
            raise ConfigError("state=True needs a state component (e.g. 'mamba')")
        needs = self._needs(self.pages_for(num_tokens), states=int(state))
        if not evict and not self.pools.has_room(needs):
            return None
        self.pools.ensure_room(needs)
        pages = self.pools.allocate_pages(needs)
        for detached, part in zip(self.detached, pages):
            detached.mark(part)
        slots = tuple(pool.slots_of(part) for pool, part in zip(self.pools.pools, pages))
        return Allocation(slots, self.names, self._state)

    def release(self, slots: Allocation | Any) -> None:
        """Give back caller-held slots unused (an :class:`Allocation`, or FULL slots)."""
        pages = self._check_held(self._parts(self._as_allocation(slots)))
        self._unmark(pages)
        self.pools.free_pages(pages)

    def insert(
        self, tokens: Any, slots: Allocation | Any, namespace: Any = None, *,
        priority: int = 0, ttl: int | None = None,
    ) -> int:
        """Cache ``tokens`` with caller-held slots: an :class:`Allocation`, or for FULL-only
        caches a FULL slot array (numpy or torch) of one whole page per page of tokens. The
        tree keeps what it lacks; duplicates, the partial tail page and an unused state go
        back to the pools, so the caller holds none of the slots afterwards. With a state
        component the allocation's state is the checkpoint at the last whole page (no
        state: nothing is cached). Returns the tokens the tree now holds for this key.
        Raises :class:`InvalidSlotsError` / :class:`InvalidSlotsTypeError` (nothing changed)
        for slots of the wrong type, dtype or length, or not held by the caller."""
        packed, space = self._request(tokens, namespace, priority, ttl)
        num_tokens = len(packed) // 4
        parts = self._parts(self._as_allocation(slots))
        self._check_lengths(parts, num_tokens)
        pages = self._check_held(parts)
        key = self._key(packed)
        length = len(key) // self.tree.unit
        sides = self.sides
        inputs = [side.direct_input(part, length) for side, part in zip(sides, parts)]
        result = self.tree.insert(key, inputs, space, priority=priority, ttl=ttl)
        cached = result.length
        leftovers = [side.direct_leftover(freed, part, length, cached)
                     for side, freed, part in zip(sides, result.freed, parts)]
        self._unmark(pages)
        self.pools.free_all(leftovers)
        self.counters["inserted_tokens"] += result.new_length
        return cached

    def _as_allocation(self, slots: Allocation | Any) -> Allocation:
        if isinstance(slots, Allocation):
            return slots
        if len(self.tree.components) > 1:
            raise ConfigError("a hybrid cache takes an Allocation (slots of every component)")
        return Allocation((as_slot_array(slots),), self.names)

    def _parts(self, allocation: Allocation) -> list[np.ndarray]:
        """Per component, the slots of ``allocation`` (validated types)."""
        if allocation.names != self.names:
            raise InvalidSlotsError(f"an allocation for components {allocation.names} "
                                    f"given to a cache of {self.names}")
        return [as_slot_array(part, what=f"{name} slots")
                for part, name in zip(allocation.parts, self.names)]

    def _check_lengths(self, parts: list[np.ndarray], num_tokens: int) -> None:
        expected = self.pages_for(num_tokens)
        for side, part in zip(self.sides, parts):
            if side.per_token and len(part) != expected:
                raise InvalidSlotsError(
                    f"{len(part)} slots for {num_tokens} tokens; expected {expected} "
                    f"(whole pages)")
            if not side.per_token and len(part) > 1:
                raise InvalidSlotsError(f"{len(part)} state slots; at most one is taken")

    def _check_held(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        """Per component, the page ids of ``parts``; raises unless the caller holds them."""
        return [detached.check(part) for detached, part in zip(self.detached, parts)]

    def _unmark(self, pages: list[np.ndarray]) -> None:
        for detached, held in zip(self.detached, pages):
            detached.unmark(held)
