"""The caller-held path (allocate → insert / release): slots not held by the caller, given
twice, cut out of pages or foreign are rejected with nothing changed, and what goes back to
the pools leaves every slot accounted for."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from radixkv.cache import CacheConfig, PrefixCache
from radixkv.cache.direct import Allocation
from radixkv.errors import InvalidSlotsError, RadixKVError

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
    rejects(cache, lambda: cache.insert(prompt(20), held), "not allocated to the caller")
    rejects(cache, lambda: cache.release(held), "not allocated to the caller")
    other = cache.allocate(8)
    assert other is not None
    cache.release(other)
    rejects(cache, lambda: cache.release(other), "not allocated to the caller")
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
    bad = Allocation((second.full, np.concatenate((second.swa[:page], second.swa[:-page]))),
                     cache.names)
    rejects(cache, lambda: cache.insert(prompt(4 * page), bad), "given twice")
    cache.insert(prompt(4 * page), second)
    cache.check_invariants()
    spare = cache.allocate(page)
    assert spare is not None
    cache.release(spare)
    cache.check_invariants()
