"""Audits of a SlotPool: the free ring against the allocation maps, and the pool against
every slot someone holds. Read-only; O(capacity + held)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from radixkv.errors import InvalidSlotsError, InvariantError
from radixkv.memory.slot_arrays import as_slot_array

if TYPE_CHECKING:
    from radixkv.memory.slot_pool import BoolArray, SlotPool


def check_pool(pool: SlotPool, held: object) -> None:
    """The body of :meth:`SlotPool.check` (see there): ring, ownership, leaks."""
    check_ring(pool)
    try:
        arr = as_slot_array(held, what="held")
    except InvalidSlotsError as exc:
        raise InvariantError(f"{pool._label()}: {exc}") from exc
    capacity = pool.capacity
    if arr.size:
        too_big = arr >= capacity
        if too_big.any():
            i = int(np.argmax(too_big))
            raise InvariantError(
                f"{pool._label()}: held[{i}] = {int(arr[i])} is a foreign slot "
                f"(capacity {capacity})"
            )
    owners = np.bincount(arr, minlength=capacity)
    twice = owners > 1
    if twice.any():
        slot = int(np.argmax(twice))
        raise InvariantError(
            f"{pool._label()}: slot {slot} is held {int(owners[slot])} times "
            "(owned by more than one holder)"
        )
    held_mask = owners == 1
    allocated_mask = np.repeat(pool._allocated, pool._page_size)
    leaked = allocated_mask & ~held_mask
    if leaked.any():
        slot = int(np.argmax(leaked))
        raise InvariantError(
            f"{pool._label()}: slot {slot} is allocated but held by nobody (leaked)"
        )
    ghost = held_mask & ~allocated_mask
    if ghost.any():
        slot = int(np.argmax(ghost))
        raise InvariantError(
            f"{pool._label()}: slot {slot} is held but free in the pool "
            "(used after free, or never allocated)"
        )


def check_ring(pool: SlotPool) -> None:
    """Raise InvariantError unless the free ring and the allocation maps agree."""
    num_pages = pool._num_pages
    if not 0 <= pool._count <= num_pages or not 0 <= pool._head < max(num_pages, 1):
        raise InvariantError(
            f"{pool._label()}: free ring out of bounds (head {pool._head}, count "
            f"{pool._count}, {num_pages} pages)"
        )
    free_pages = pool._peek(pool._count)
    if free_pages.size and (free_pages.min() < 0 or free_pages.max() >= num_pages):
        raise InvariantError(f"{pool._label()}: free ring holds an id that is not a page")
    queued = np.bincount(free_pages, minlength=num_pages)
    checks: tuple[tuple[BoolArray, str], ...] = (
        (queued > 1, "is queued as free more than once"),
        ((queued == 1) & pool._allocated, "is both allocated and queued as free"),
        ((queued == 0) & ~pool._allocated, "is neither allocated nor queued as free (lost)"),
        (pool._allocated & ~pool.ever_allocated, "is allocated but not marked as ever"),
    )
    _check_fresh_tail(pool)
    for bad, why in checks:
        if bad.any():
            page = int(np.argmax(bad))
            raise InvariantError(
                f"{pool._label()}: page {page} (slots {page * pool._page_size}.."
                f"{page * pool._page_size + pool._page_size - 1}) {why}"
            )


def _check_fresh_tail(pool: SlotPool) -> None:
    """Raise InvariantError unless the pages never handed out since the reset still sit
    where the ascending ring put them, just ahead of the head (what ``ever_allocated``
    reads off the ``_handed_out`` counter)."""
    fresh, num_pages = pool._handed_out, pool._num_pages
    if fresh >= num_pages:
        return
    if pool._head != fresh or not np.array_equal(
            pool._queue[fresh:], np.arange(fresh, num_pages, dtype=np.int64)):
        raise InvariantError(
            f"{pool._label()}: {num_pages - fresh} pages were never handed out, but the free "
            f"ring does not hold them in order from position {fresh} (head {pool._head})")
