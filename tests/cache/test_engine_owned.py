"""Engine-owned slots: a cache whose FULL pool is the engine's own allocator stores the
engine's KV indices, and every index it gives up goes back to the engine exactly once (the
strict allocator raises on anything else); bad input and bad answers change nothing."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import (
    ConfigError,
    EngineError,
    InvalidArgumentError,
    InvalidSlotsError,
    InvariantError,
)

from ..memory.engine_allocator import StrictEngineAllocator

CAPACITY = 128
PAGES = (1, 4)


def make(page: int, **extra: object) -> tuple[PrefixCache, StrictEngineAllocator]:
    engine = StrictEngineAllocator(CAPACITY, page)
    config = CacheConfig(capacity=CAPACITY, page_size=page, **extra)  # type: ignore[arg-type]
    return PrefixCache(config, allocators={"full": engine}), engine


def computed(engine: StrictEngineAllocator, n: int) -> np.ndarray:
    """The slots an engine allocates itself for ``n`` tokens (whole pages, the tail unused)."""
    page = engine.page_size
    slots = engine.alloc(-(-n // page) * page)
    assert slots is not None
    return slots[:n]


def unchanged(cache: PrefixCache, engine: StrictEngineAllocator, error: type[Exception],
              call: Callable[[], object], message: str) -> None:
    before, free_before = cache.snapshot(), list(engine.free_list)
    with pytest.raises(error, match=message):
        call()
    assert cache.snapshot() == before and engine.free_list == free_before
    cache.check_invariants()


@pytest.mark.parametrize("page", PAGES)
def test_the_tree_stores_the_engines_indices_and_eviction_hands_exactly_them_back(
        page: int) -> None:
    cache, engine = make(page)
    tokens = list(range(1, 31))
    slots = computed(engine, 30)
    whole = 30 - 30 % page
    assert cache.adopt(tokens, slots) == whole
    cache.check_invariants()
    assert cache.match(tokens).slots.tolist() == slots[:whole].tolist()
    assert cache.stats().components["full"].cached == whole
    assert engine.freed == []  # the tail stays the engine's: the caller frees it
    assert cache.evict(full=whole) == {"full": whole}
    cache.check_invariants()
    assert sorted(engine.freed) == sorted(slots[:whole].tolist())


@pytest.mark.parametrize("page", PAGES)
def test_duplicates_of_what_the_tree_holds_go_back_to_the_engine_once(page: int) -> None:
    cache, engine = make(page)
    first, second = computed(engine, 24), computed(engine, 32)
    cache.adopt(list(range(24)), first)
    assert cache.adopt(list(range(32)), second) == 32
    cache.check_invariants()
    assert sorted(engine.freed) == sorted(second[:24].tolist())
    assert cache.match(list(range(32))).slots.tolist() == first.tolist() + second[24:].tolist()


@pytest.mark.parametrize("page", PAGES)
def test_a_borrowed_prefix_stays_the_trees_and_only_the_new_part_is_adopted(page: int) -> None:
    cache, engine = make(page)
    cache.adopt(list(range(16)), computed(engine, 16))
    match = cache.match(list(range(40)))
    receipt = cache.lock(match)
    new = computed(engine, 24)
    slots = np.concatenate((match.slots, new))
    assert cache.adopt(list(range(40)), slots, borrowed=16) == 40
    cache.unlock(receipt)
    cache.check_invariants()
    assert engine.freed == []
    assert cache.match(list(range(40))).slots.tolist() == slots.tolist()


@pytest.mark.parametrize("page", PAGES)
def test_adopt_refuses_what_it_cannot_take_and_changes_nothing(page: int) -> None:
    cache, engine = make(page)
    held = computed(engine, 16)
    cache.adopt(list(range(16)), held)
    fresh = computed(engine, 16)
    unchanged(cache, engine, InvalidSlotsError, lambda: cache.adopt(list(range(50, 66)), held),
              "already holds")
    unchanged(cache, engine, InvalidSlotsError, lambda: cache.adopt(list(range(8)), fresh),
              "one slot per token")
    wrong = np.concatenate((fresh[:16][::-1], computed(engine, 8)))
    unchanged(cache, engine, InvalidSlotsError,
              lambda: cache.adopt(list(range(24)), wrong, borrowed=16), "not the tree's")
    unchanged(cache, engine, InvalidArgumentError,
              lambda: cache.adopt(list(range(16)), fresh, borrowed=32), "borrowed")
    if page > 1:
        shifted = fresh + 1
        unchanged(cache, engine, InvalidSlotsError,
                  lambda: cache.adopt(list(range(70, 86)), shifted), "aligned|whole pages")


def test_leases_allocate_from_the_engine_and_give_back_tails_and_duplicates() -> None:
    cache, engine = make(4)
    lease = cache.admit(list(range(10)))
    assert engine.available == CAPACITY - 4 - 12  # page 0 is the engine's padding
    cache.finish(lease)
    cache.check_invariants()
    assert len(engine.freed) == 4  # the partial tail page
    again = cache.admit(list(range(12)))
    assert again.cached_length == 8
    cache.abort(again)
    cache.check_invariants()
    cache.reset()
    assert sorted(engine.free_list) == list(range(1, CAPACITY // 4))


def test_admission_evicts_into_the_engines_allocator_when_it_runs_short() -> None:
    cache, engine = make(1)
    cache.adopt(list(range(100)), computed(engine, 100))
    assert engine.available == CAPACITY - 1 - 100
    lease = cache.admit(list(range(500, 560)))
    cache.check_invariants()
    assert len(engine.freed) >= 60 - (CAPACITY - 1 - 100)
    cache.abort(lease)
    cache.check_invariants()


def test_reset_hands_every_held_slot_back_once() -> None:
    cache, engine = make(4)
    cache.adopt(list(range(40)), computed(engine, 40))
    cache.adopt(list(range(100, 120)), computed(engine, 20))
    cache.reset()
    cache.check_invariants()
    assert len(engine.freed) == 60 and len(set(engine.freed)) == 60
    assert engine.allocated == set()


class Garbage(StrictEngineAllocator):
    """Hands out what it is told to (``answer``), ignoring its free list."""

    answer: object = None

    def alloc(self, num_slots: int) -> object:  # type: ignore[override]
        return self.answer


@pytest.mark.parametrize("answer", [np.array([1, 2, 3]), np.array([-1] * 8), "x",
                                    np.arange(8, 16)])
def test_an_allocator_answering_outside_its_contract_raises_engine_error_holding_nothing(
        answer: object) -> None:
    engine = Garbage(CAPACITY, 4)
    cache = PrefixCache(CacheConfig(capacity=CAPACITY, page_size=4), allocators={"full": engine})
    cache.adopt(list(range(8)), engine.slots([2, 3]))
    engine.answer = answer
    with pytest.raises(EngineError):
        cache.admit(list(range(4)) + list(range(50, 58)))  # a locked prefix, then new pages
    cache.check_invariants()
    # nothing held, nothing locked (the lock's split of the cached node stays)
    stats = cache.stats()
    assert (stats.active_leases, stats.components["full"].protected) == (0, 0)
    assert cache.match(list(range(8))).slots.tolist() == engine.slots([2, 3]).tolist()
    assert cache.pool.snapshot()[2] == bytes([0, 0, 1, 1] + [0] * (CAPACITY // 4 - 4))
    lease = cache.admit(list(range(8)))  # and the cache keeps working
    cache.finish(lease)
    cache.check_invariants()


class FailingFree(StrictEngineAllocator):
    def free(self, slots: np.ndarray) -> None:
        raise RuntimeError("engine down")


def test_a_free_that_raises_is_counted_and_the_cache_stays_consistent() -> None:
    engine = FailingFree(CAPACITY, 1)
    cache = PrefixCache(CacheConfig(capacity=CAPACITY, page_size=1), allocators={"full": engine})
    cache.adopt(list(range(20)), computed(engine, 20))
    assert cache.evict(full=20) == {"full": 20}
    cache.check_invariants()
    assert cache.pool.faults == 1 and "engine down" in str(cache.pool.last_fault)


def test_check_invariants_finds_a_slot_the_cache_holds_but_nothing_uses() -> None:
    cache, engine = make(1)
    cache.adopt(list(range(8)), computed(engine, 8))
    cache.pool.adopt_pages(computed(engine, 1))  # held by the pool, by no owner: a leak
    with pytest.raises(InvariantError, match="leaked"):
        cache.check_invariants()


@pytest.mark.parametrize("allocators, message", [
    ({"swa": StrictEngineAllocator(CAPACITY, 1)}, "no such component"),
    ({"full": StrictEngineAllocator(64, 1)}, "configuration says"),
    ({"full": StrictEngineAllocator(CAPACITY, 4)}, "configuration says"),
    ({"full": object()}, "not a SlotAllocator"),
])
def test_allocators_that_do_not_fit_the_configuration_are_refused(
        allocators: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PrefixCache(CacheConfig(capacity=CAPACITY, page_size=1),
                    allocators=allocators)  # type: ignore[arg-type]


def test_adopt_needs_an_engine_owned_cache() -> None:
    cache = PrefixCache(CacheConfig(capacity=CAPACITY))
    with pytest.raises(ConfigError, match="engine's allocator"):
        cache.adopt([1, 2], np.array([0, 1]))


@pytest.mark.parametrize("page", PAGES)
def test_sizes_reads_what_stats_reports_without_building_it(page: int) -> None:
    cache, engine = make(page)
    cache.adopt(list(range(40)), computed(engine, 40))
    receipt = cache.lock(cache.match(list(range(16))))
    full = cache.stats().components["full"]
    assert cache.sizes() == (full.cached, full.protected) == (40 - 40 % page, 16)
    cache.unlock(receipt)
    assert cache.sizes() == (40 - 40 % page, 0)


class FailsOnCue(StrictEngineAllocator):
    """Allocates as the strict allocator does until ``fail`` is set, then answers garbage."""

    fail = False

    def alloc(self, num_slots: int) -> np.ndarray | None:
        if self.fail:
            return np.array([-1] * num_slots)
        return super().alloc(num_slots)


def test_an_allocator_failing_a_load_back_leaves_no_lock_and_the_host_values_intact() -> None:
    from radixkv import HostTier

    engine = FailsOnCue(CAPACITY, 4)
    cache = PrefixCache(CacheConfig(capacity=CAPACITY, page_size=4, host=HostTier(capacity=64)),
                        allocators={"full": engine})
    prompt = list(range(1, 13))
    cache.finish(cache.admit(prompt))
    cache.wait()
    cache.evict(full=12)  # backed up: the device copy goes, the host one stays
    cache.wait()
    assert cache.match(prompt).length == 0 and cache.tree.tiers[1].cached == [12]
    engine.fail = True
    with pytest.raises(EngineError):
        cache.admit([*prompt, 50, 51, 52, 53], load_back=True)  # the load-back's allocation
    cache.check_invariants()
    stats = cache.stats()
    assert (stats.active_leases, stats.components["full"].protected) == (0, 0)
    assert not cache.tree.live_locks and cache.tree.tiers[1].cached == [12]
    engine.fail = False  # the cache keeps working: the same admission loads back
    lease = cache.admit([*prompt, 50, 51, 52, 53], load_back=True)
    cache.wait(lease)
    assert lease.ready and lease.cached_length == 12
    cache.finish(lease)
    cache.check_invariants()
