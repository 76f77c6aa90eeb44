"""The caller-held path (allocate → insert / release): slots not held by the caller, given
twice, cut out of pages or foreign are rejected with nothing changed, and what goes back to
the pools leaves every slot accounted for."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import pytest

from radixkv.cache import AllocationState, CacheConfig, PrefixCache
from radixkv.cache.direct import Allocation
from radixkv.errors import AllocationError, InvalidSlotsError, InvariantError, RadixKVError

from ..audited import assert_refused

CAPACITY = 256
PAGES = (1, 4, 16)


def make(page: int, **extra: object) -> PrefixCache:
    return PrefixCache(CacheConfig(capacity=CAPACITY, page_size=page, **extra))  # type: ignore[arg-type]


def prompt(n: int, first: int = 1) -> list[int]:
    return list(range(first, first + n))


def rejects(cache: PrefixCache, call: Callable[[], object], message: str) -> None:
    """``call`` raises InvalidSlotsError naming ``message``; the cache is as before."""
    before = cache.snapshot()
    with pytest.raises(InvalidSlotsError, match=message) as raised:
        call()
    assert isinstance(raised.value, RadixKVError)
    assert cache.snapshot() == before
    cache.check_invariants()


def refused(cache: PrefixCache, call: Callable[[], object], message: str) -> None:
    """``call`` raises AllocationError naming ``message``; the cache is as before."""
    error = assert_refused(cache, AllocationError, call, message)
    assert isinstance(error, ValueError)
    cache.check_invariants()


@pytest.mark.parametrize("page", PAGES)
def test_insert_keeps_new_pages_and_returns_duplicates_and_the_tail(page: int) -> None:
    cache = make(page)
    first = cache.allocate(40)
    assert first is not None
    assert cache.insert(prompt(40), first) == 40 - 40 % page
    cache.check_invariants()
    second = cache.allocate(50)
    assert second is not None
    free_before = cache.pool.available
    assert cache.insert(prompt(50), second) == 50 - 50 % page
    cache.check_invariants()
    new_pages = (50 - 50 % page - (40 - 40 % page)) // page * page
    assert cache.pool.available == free_before + len(second.full) - new_pages
    assert cache.match(prompt(50)).length == 50 - 50 % page


@pytest.mark.parametrize("page", PAGES)
def test_slots_no_longer_held_are_rejected(page: int) -> None:
    cache = make(page)
    held = cache.allocate(20)
    assert held is not None
    cache.insert(prompt(20), held)
    refused(cache, lambda: cache.insert(prompt(20), held), "already inserted")
    refused(cache, lambda: cache.release(held), "already inserted")
    rejects(cache, lambda: cache.release(held.full), "not allocated to the caller")
    other = cache.allocate(8)
    assert other is not None
    cache.release(other)
    refused(cache, lambda: cache.release(other), "already released")
    rejects(cache, lambda: cache.insert(prompt(8), other.full), "not allocated to the caller")
    cache.check_invariants()


@pytest.mark.parametrize("page", PAGES)
def test_a_page_given_twice_is_rejected(page: int) -> None:
    cache = make(page)
    held = cache.allocate(2 * page)
    assert held is not None
    twice = np.concatenate((held.full[:page], held.full[:page]))
    rejects(cache, lambda: cache.insert(prompt(2 * page), twice), "given twice")
    rejects(cache, lambda: cache.release(twice), "given twice")
    cache.release(held)
    cache.check_invariants()


@pytest.mark.parametrize("page", (4, 16))
def test_slots_cut_out_of_pages_are_rejected(page: int) -> None:
    cache = make(page)
    held = cache.allocate(2 * page)
    assert held is not None
    swapped = held.full.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    rejects(cache, lambda: cache.release(swapped), "not whole aligned pages")
    shifted = held.full + 1
    rejects(cache, lambda: cache.release(shifted), "not whole aligned pages")
    rejects(cache, lambda: cache.release(held.full[:-1]), "not whole pages")
    cache.release(held)
    cache.check_invariants()


@pytest.mark.parametrize("page", PAGES)
def test_foreign_and_negative_slots_are_rejected(page: int) -> None:
    cache = make(page)
    held = cache.allocate(page)
    assert held is not None
    foreign = np.arange(CAPACITY, CAPACITY + page, dtype=np.int64)
    rejects(cache, lambda: cache.release(foreign), "outside the pool")
    negative = held.full - CAPACITY
    rejects(cache, lambda: cache.release(negative), "negative")
    rejects(cache, lambda: cache.insert(prompt(page), foreign), "outside the pool")
    cache.release(held)
    cache.check_invariants()


@pytest.mark.parametrize("page", (1, 16))
def test_hybrid_swa_insert_and_release(page: int) -> None:
    cache = make(page, components=("full", "swa"), sliding_window=32)
    first = cache.allocate(3 * page + 1)
    assert first is not None
    cache.insert(prompt(3 * page + 1), first)
    cache.check_invariants()
    second = cache.allocate(4 * page)
    assert second is not None
    assert second.swa is not None
    bad = Allocation(object(), second.id,
                     (second.full, np.concatenate((second.swa[:page], second.swa[:-page]))),
                     cache.names, None)
    refused(cache, lambda: cache.insert(prompt(4 * page), bad), "another cache")
    cache.insert(prompt(4 * page), second)
    cache.check_invariants()
    spare = cache.allocate(page)
    assert spare is not None
    cache.release(spare)
    cache.check_invariants()


# ---------------------------------------------------------------------- allocation identity


@pytest.mark.parametrize("page", PAGES)
def test_a_spent_allocation_is_refused_after_its_slots_went_to_another_holder(page: int) -> None:
    cache = make(page)
    first = cache.allocate(CAPACITY)
    assert first is not None
    cache.release(first)
    assert first.status is AllocationState.RELEASED
    second = cache.allocate(CAPACITY)  # the whole pool: the same slots as first
    assert second is not None and sorted(second.full) == sorted(first.full)
    refused(cache, lambda: cache.release(first), "already released")
    refused(cache, lambda: cache.insert(prompt(CAPACITY), first), "already released")
    assert cache.insert(prompt(CAPACITY), second) == CAPACITY
    assert second.status is AllocationState.INSERTED
    refused(cache, lambda: cache.release(second), "already inserted")
    assert cache.allocate(page, evict=False) is None  # the tree holds every slot
    cache.check_invariants()


@pytest.mark.parametrize("page", PAGES)
def test_an_allocation_of_another_cache_with_the_same_slot_ids_is_refused(page: int) -> None:
    cache, other = make(page), make(page)
    mine, theirs = cache.allocate(2 * page), other.allocate(2 * page)
    assert mine is not None and theirs is not None
    assert mine.full.tolist() == theirs.full.tolist()
    refused(cache, lambda: cache.release(theirs), "another cache")
    refused(cache, lambda: cache.insert(prompt(2 * page), theirs), "another cache")
    cache.release(mine)
    other.release(theirs)
    cache.check_invariants()
    other.check_invariants()


def test_a_copy_of_an_allocation_is_refused_and_the_original_still_works() -> None:
    cache = make(4)
    held = cache.allocate(8)
    assert held is not None
    for twin in (copy.copy(held), copy.deepcopy(held)):
        refused(cache, lambda twin=twin: cache.release(twin), "not the allocation")
        refused(cache, lambda twin=twin: cache.insert(prompt(8), twin), "not the allocation")
    cache.release(held)
    assert cache.stats().available == CAPACITY


def test_allocation_slots_are_read_only() -> None:
    cache = make(1, components=("full", "swa"), sliding_window=8)
    held = cache.allocate(4)
    assert held is not None and held.swa is not None
    for part in (held.full, held.swa):
        with pytest.raises(ValueError, match="read-only"):
            part[0] = 99
    cache.insert(prompt(4), held)
    cache.check_invariants()


def test_a_hybrid_allocation_released_twice_is_refused() -> None:
    cache = make(4, components=("full", "swa", "mamba"), sliding_window=8,
                 mamba_track_interval=4, mamba_states=2)
    first = cache.allocate(CAPACITY, state=True)
    assert first is not None
    cache.release(first)
    second = cache.allocate(CAPACITY, state=True)
    assert second is not None
    refused(cache, lambda: cache.release(first), "already released")
    cache.release(second)
    assert cache.stats().components["mamba"].pool_available == 2


def test_a_bare_array_stands_for_the_whole_allocation_it_came_from() -> None:
    cache = make(4)
    held = cache.allocate(8)
    assert held is not None
    rejects(cache, lambda: cache.release(held.full[:4]), "whole of one allocation")
    cache.release(np.array(held.full))  # a copy of the slots: the same allocation
    assert held.status is AllocationState.RELEASED
    refused(cache, lambda: cache.release(held), "already released")
    again = cache.allocate(8)
    assert again is not None
    assert cache.insert(prompt(8), again.full.copy()) == 8
    assert again.status is AllocationState.INSERTED
    cache.check_invariants()


def test_reset_invalidates_held_allocations() -> None:
    cache = make(4)
    held = cache.allocate(8)
    assert held is not None
    cache.reset()
    assert held.status is AllocationState.INVALIDATED
    refused(cache, lambda: cache.release(held), "already invalidated")
    assert cache.stats().available == CAPACITY


def test_check_invariants_notices_a_held_allocation_whose_slots_the_cache_gave_back() -> None:
    cache = make(4)
    held = cache.allocate(8)
    assert held is not None
    pages = cache.detached[0].pages(held.full)
    cache.detached[0].unmark(pages)  # a bug that frees a live holder's slots
    cache.pools.free_pages([pages])
    with pytest.raises(InvariantError, match="allocation"):
        cache.check_invariants()
