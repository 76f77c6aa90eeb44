"""The caller-held path: engines that keep their own request records allocate slots, run the
model, then hand tokens and slots to the tree in one insert (the shape of SGLang's API)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.keys import TOKEN_BYTES, Namespace
from ..errors import AllocationError, ConfigError, InvalidArgumentError, InvalidSlotsError
from ..memory import EnginePool, as_slot_array
from .allocation import Allocation, AllocationState
from .arguments import as_bool, as_int, request_args
from .results import PRIMARY
from .tier_driver import TierDriver

if TYPE_CHECKING:  # the state imports the parts' modules that build its listener
    from .cache_state import CacheState

__all__ = ["Allocation", "Direct"]


class Direct:
    """allocate → (run the model) → insert, or release; adopt. Built on the cache's state
    (the references below) with the :class:`TierDriver` that tells the tiers below the
    device of what was inserted."""

    def __init__(self, state: CacheState, tiers: TierDriver) -> None:
        self.tiers = tiers
        self.page_size, self.tree, self.sides = state.page_size, state.tree, state.sides
        self.pools, self.pool, self.room = state.pools, state.pool, state.room
        self.names, self.counters, self.tiered = state.names, state.counters, state.tiered
        self.detached, self._state, self._owner = state.detached, state._state, state._owner
        self._allocation_ids, self._allocations = state._allocation_ids, state._allocations
        # bench insert: the state's bookkeeping bound once (calls cost what self's did)
        self._needs, self._key, self.pages_for = state._needs, state._key, state.pages_for

    def allocate(
        self, num_tokens: int, *, state: bool = False, evict: bool = True
    ) -> Allocation | None:
        """Allocate slots for ``num_tokens`` tokens (whole pages, in every per-token
        component) and, with ``state``, a state slot (MAMBA). Evicts as needed, or with
        ``evict=False`` returns ``None`` when the pools are short. Raises
        :class:`OutOfSlotsError` (nothing changed) when even eviction cannot make room. The
        caller holds the slots until it passes them to :meth:`insert` or :meth:`release`.
        ``state`` and ``evict`` are bools (numpy bools too): anything else raises
        :class:`InvalidArgumentError`."""
        if type(num_tokens) is not int or num_tokens < 0:  # bench insert: one test
            num_tokens = as_int("num_tokens", num_tokens, 0)
        if state is not False and state is not True:  # bench insert: one test per flag
            state = as_bool("state", state)
        if evict is not True and evict is not False:
            evict = as_bool("evict", evict)
        if state and self._state is None:
            raise ConfigError("state=True needs a state component (e.g. 'mamba')")
        needs = self._needs(self.pages_for(num_tokens), states=int(state))
        pools = self.pools
        # bench insert (short, p1): with room free ensure_room cannot refuse (0.59 us saved)
        if not self.room.has_room(needs):
            if not evict:
                return None
            self.room.ensure_room(needs)
            self.room.make_room(needs)
        pages = pools.allocate_pages(needs)
        allocation_id = next(self._allocation_ids)
        slots = []
        for detached, pool, part in zip(self.detached, pools.pools, pages):
            if len(part):  # bench insert (short): no numpy call for a pool asked nothing
                detached.mark(part, allocation_id)
                slots.append(pool.slots_of(part))
            else:
                slots.append(part)
        allocation = Allocation(self._owner, allocation_id, tuple(slots), self.names,
                                self._state, tuple(pages))
        self._allocations[allocation_id] = allocation
        return allocation

    def release(self, slots: Allocation | Any) -> None:
        """Give back caller-held slots unused: an :class:`Allocation`, or for FULL-only
        caches its FULL slots as an array (which stands for that whole allocation). Raises
        :class:`AllocationError` (nothing changed) for an allocation already inserted,
        released or invalidated, a copy of one, or another cache's."""
        allocation = self._held_allocation(slots)
        pages = self._pages(allocation)
        self._spend(allocation, pages, AllocationState.RELEASED)
        self.pools.free_pages(pages)

    def insert(
        self, tokens: Any, slots: Allocation | Any, namespace: Any = None, *,
        priority: int = 0, ttl: int | None = None,
    ) -> int:
        """Cache ``tokens`` with caller-held slots: an :class:`Allocation`, or for FULL-only
        caches a FULL slot array (numpy or torch) of one whole page per page of tokens. The
        tree keeps what it lacks; duplicates, the partial tail page and an unused state go
        back to the pools, so the caller holds none of the slots afterwards. With a state
        component (MAMBA) the allocation's state is the checkpoint at the last whole page (no
        state: nothing is cached). Returns the tokens the tree now holds for this key. Raises
        :class:`AllocationError` as :meth:`release` does, :class:`InvalidSlotsError` /
        :class:`InvalidSlotsTypeError` (nothing changed) for slots of the wrong type, dtype
        or length, or not held by the caller."""
        packed, space, priority, ttl = request_args(tokens, namespace, priority, ttl)
        num_tokens = len(packed) // TOKEN_BYTES
        allocation = self._held_allocation(slots)
        parts = allocation._parts
        self._check_lengths(parts, num_tokens)
        pages = self._pages(allocation)
        key = self._key(packed)
        length = len(key) // self.tree.unit
        sides = self.sides
        inputs = [side.direct_input(part, length) for side, part in zip(sides, parts)]
        result = self.tree.insert(key, inputs, space, priority=priority, ttl=ttl)
        cached = result.length
        leftovers = [side.direct_leftover(freed, part, length, cached)
                     for side, freed, part in zip(sides, result.freed, parts)]
        self._spend(allocation, pages, AllocationState.INSERTED)
        self.pools.free_all(leftovers)
        self.counters["inserted_tokens"] += result.new_length
        if self.tiered:
            self.tiers.inserted(result.node)
        return cached

    def adopt(
        self, tokens: Any, slots: Any, namespace: Any = None, *, borrowed: int = 0,
        priority: int = 0, ttl: int | None = None,
    ) -> int:
        """Cache ``tokens`` with KV slots the engine allocated itself, on a FULL-only cache
        whose pool is the engine's allocator (``PrefixCache(config, allocators={"full":
        allocator})``): SGLang's split of work, where the engine allocates and the tree
        keeps what it lacks.

        ``slots`` holds one slot per token (numpy or torch). Only whole pages are cached;
        the slots past the last whole page stay the caller's, untouched. The first
        ``borrowed`` tokens (whole pages) are a prefix the caller matched and holds locked:
        their slots must be the tree's (checked) and stay the tree's. Of the rest, the tree
        keeps the slots of what it lacked (they are the tree's from now on) and gives the
        duplicates of what it already held back to the allocator, once. Returns the tokens
        of this key the tree holds afterwards; slots at positions from there on (an insert
        cut where a load-back is still writing) stay the caller's. Match again to read the
        tree's slots for the prefix. Cost O(depth + tokens) numpy work.

        Raises :class:`ConfigError` on a cache that does not run on an engine's
        allocator; :class:`InvalidSlotsError` / :class:`InvalidSlotsTypeError` for slots of
        the wrong type or length, not whole aligned pages, held by the cache already, or a
        borrowed prefix that is not the tree's; :class:`InvalidArgumentError` for a bad
        ``borrowed``. Nothing changes when it raises.
        """
        pool = self.pool
        if type(pool) is not EnginePool or len(self.sides) != 1:
            raise ConfigError("adopt() needs a FULL-only cache on the engine's allocator "
                              "(PrefixCache(config, allocators={'full': allocator}))")
        packed, space, priority, ttl = request_args(tokens, namespace, priority, ttl)
        arr = as_slot_array(slots)
        if len(arr) != len(packed) // TOKEN_BYTES:
            raise InvalidSlotsError(f"{len(arr)} slots for {len(packed) // TOKEN_BYTES} "
                                    "tokens: adopt() takes one slot per token")
        key = self._key(packed)
        length = len(key) // self.tree.unit
        borrowed = as_int("borrowed", borrowed, 0)
        if borrowed % self.page_size or borrowed > length:
            raise InvalidArgumentError(f"borrowed={borrowed} is not whole pages within the "
                                       f"{length} cacheable tokens")
        part = arr[:length]
        self._check_borrowed(key, space, part, borrowed)
        pages = pool.foreign_pages(part[borrowed:])
        result = self.tree.insert(key, [self.sides[0].direct_input(part, length)], space,
                                  borrowed=borrowed, priority=priority, ttl=ttl)
        pool.hold(pages[: (result.length - borrowed) // self.page_size])
        self.pools.free_all(result.freed)
        self.counters["inserted_tokens"] += result.new_length
        if self.tiered:
            self.tiers.inserted(result.node)
        return result.length

    def _check_borrowed(self, key: bytes, space: Namespace, part: np.ndarray,
                        borrowed: int) -> None:
        """Raise :class:`InvalidSlotsError` unless the tree holds the key's first
        ``borrowed`` elements with exactly ``part``'s first slots; pure, O(depth)."""
        if not borrowed:
            return
        found = self.tree.match(key[: borrowed * self.tree.unit], space, touch=False)
        # a usable path holds FULL device values on every node
        held: list[np.ndarray] = [node.values[PRIMARY] for node in found.path]  # type: ignore[misc]
        if found.length < borrowed or np.concatenate(held)[:borrowed].tobytes() \
                != part[:borrowed].tobytes():
            raise InvalidSlotsError(f"the first {borrowed} slots are not the tree's for this "
                                    "prefix (adopt's borrowed prefix comes from a match, "
                                    "locked)")

    def _held_allocation(self, slots: Allocation | Any) -> Allocation:
        """The held allocation ``slots`` stands for: the very object this cache issued, or
        (FULL-only caches) an array of exactly its FULL slots."""
        if type(slots) is Allocation:
            # bench insert: one dict get proves owner, liveness and identity at once
            if self._allocations.get(slots.id) is not slots:
                self._refuse_allocation(slots)
            return slots
        if len(self.tree.components) > 1:
            raise ConfigError("a hybrid cache takes an Allocation (slots of every component)")
        return self._allocation_of(as_slot_array(slots))

    def _refuse_allocation(self, allocation: Allocation) -> None:
        """Raise the :class:`AllocationError` that says why ``allocation`` is not held."""
        if allocation.owner is not self._owner:
            raise AllocationError(f"allocation {allocation.id} was issued by another cache")
        if allocation.status is not AllocationState.HELD:
            raise AllocationError(
                f"allocation {allocation.id} was already {allocation.status.value}")
        raise AllocationError(f"allocation {allocation.id} is not the allocation this cache "
                              "issued (a copy?)")

    def _allocation_of(self, full: np.ndarray) -> Allocation:
        """The held allocation whose primary (FULL) slots are exactly ``full``. A bare array cannot
        prove which allocation it came from: one whose slots were released and allocated
        again reads as the new holder's, so pass the :class:`Allocation` where that matters."""
        detached = self.detached[PRIMARY]
        holder = detached.holder_of(full)
        allocation = self._allocations.get(holder)
        if allocation is not None and allocation.full.tobytes() == full.tobytes():
            return allocation
        if not len(full):
            raise InvalidSlotsError("an empty slot array stands for no allocation")
        if not holder:
            detached.explain(full, holder)
        detached.check(full, holder)  # raises if the pages are not all this holder's
        raise InvalidSlotsError("slots are not the whole of one allocation; pass the "
                                "Allocation, or all of its primary slots")

    def _pages(self, allocation: Allocation) -> tuple[np.ndarray, ...]:
        """Per component, the page ids of a held ``allocation`` (one this cache issued, and
        live: its slots are still exactly what allocate gave it, see :class:`Allocation`)."""
        pages = allocation._pages
        assert pages is not None  # issued by allocate, which records them
        return pages

    def _check_lengths(self, parts: tuple[np.ndarray, ...], num_tokens: int) -> None:
        expected = self.pages_for(num_tokens)
        for side, part in zip(self.sides, parts):
            if side.per_token and len(part) != expected:
                raise InvalidSlotsError(
                    f"{len(part)} slots for {num_tokens} tokens; expected {expected} "
                    f"(whole pages)")

    def _spend(self, allocation: Allocation, pages: tuple[np.ndarray, ...],
               status: AllocationState) -> None:
        """The caller no longer holds ``allocation`` (its ``pages``, per component)."""
        for detached, held in zip(self.detached, pages):
            if len(held):
                detached.unmark(held)
        allocation.status = status
        del self._allocations[allocation.id]
