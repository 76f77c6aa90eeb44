"""Tests of SlotPool: page-granular allocation, FIFO reuse, refused frees, and check()."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from radixkv.errors import ConfigError, InvalidSlotsError, InvalidSlotsTypeError, InvariantError
from radixkv.memory import SlotArray, SlotPool, SlotPoolConfig


def make_pool(capacity: int, page_size: int = 1) -> SlotPool:
    return SlotPool(SlotPoolConfig(capacity=capacity, page_size=page_size))


def ids(*values: int) -> SlotArray:
    return np.array(values, dtype=np.int64)


def must_alloc(pool: SlotPool, num_tokens: int) -> SlotArray:
    slots = pool.alloc(num_tokens)
    assert slots is not None
    return slots


# ---------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("capacity", "page_size", "message"),
    [
        (10, 4, "multiple of page_size"),
        (8, 0, "page_size must be >= 1"),
        (8, -2, "page_size must be >= 1"),
        (-4, 1, "capacity must be >= 0"),
        (8.0, 1, "capacity must be an int"),
        (True, 1, "capacity must be an int"),
        (8, 2.0, "page_size must be an int"),
    ],
)
def test_bad_config_is_refused(capacity: object, page_size: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SlotPoolConfig(capacity=capacity, page_size=page_size)  # type: ignore[arg-type]


def test_bad_config_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="name must be a str"):
        SlotPoolConfig(capacity=4, name=3)  # type: ignore[arg-type]


def test_config_accepts_numpy_integers_as_plain_ints() -> None:
    config = SlotPoolConfig(capacity=np.int64(8), page_size=np.int32(4))
    assert type(config.capacity) is int
    assert type(config.page_size) is int
    assert config.num_pages == 2


def test_pool_needs_a_config() -> None:
    with pytest.raises(ConfigError):
        SlotPool(16)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- allocation


def test_fresh_pool_allocates_ascending() -> None:
    pool = make_pool(8)
    assert must_alloc(pool, 3).tolist() == [0, 1, 2]
    assert must_alloc(pool, 2).tolist() == [3, 4]
    assert must_alloc(pool, 3).tolist() == [5, 6, 7]


def test_fresh_paged_pool_allocates_ascending_pages() -> None:
    pool = make_pool(16, page_size=4)
    assert must_alloc(pool, 5).tolist() == list(range(8))
    assert must_alloc(pool, 4).tolist() == list(range(8, 12))


@pytest.mark.parametrize("page_size", [1, 4, 16])
def test_alloc_rounds_up_to_whole_pages(page_size: int) -> None:
    for num_tokens in sorted({1, max(page_size - 1, 1), page_size, page_size + 1, 3 * page_size}):
        pool = make_pool(8 * page_size, page_size)
        slots = must_alloc(pool, num_tokens)
        num_pages = -(-num_tokens // page_size)
        assert slots.dtype == np.int64
        assert len(slots) == num_pages * page_size
        pages = slots.reshape(num_pages, page_size)
        assert (pages[:, 0] % page_size == 0).all()
        assert (np.diff(pages, axis=1) == 1).all()
        assert pool.allocated == num_pages * page_size
        assert pool.available == pool.capacity - pool.allocated
        assert pool.num_free_pages == 8 - num_pages


def test_alloc_zero_returns_empty_even_when_full() -> None:
    pool = make_pool(4, page_size=2)
    must_alloc(pool, 4)
    empty = pool.alloc(0)
    assert empty is not None
    assert empty.dtype == np.int64
    assert empty.shape == (0,)


def test_alloc_failure_returns_none_and_changes_nothing() -> None:
    pool = make_pool(8, page_size=2)
    must_alloc(pool, 3)
    before = pool.snapshot()
    assert pool.alloc(5) is None
    assert pool.alloc(100) is None
    assert pool.snapshot() == before
    assert pool.available == 4


def test_alloc_takes_exactly_the_rest() -> None:
    pool = make_pool(8, page_size=4)
    must_alloc(pool, 1)
    assert must_alloc(pool, 3).tolist() == [4, 5, 6, 7]
    assert pool.available == 0
    assert pool.alloc(1) is None


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, InvalidSlotsError), (1.5, InvalidSlotsTypeError), (True, InvalidSlotsTypeError)],
)
def test_alloc_refuses_bad_counts(value: object, error: type[Exception]) -> None:
    pool = make_pool(4)
    before = pool.snapshot()
    with pytest.raises(error, match="num_tokens"):
        pool.alloc(value)  # type: ignore[arg-type]
    assert pool.snapshot() == before


def test_alloc_accepts_numpy_integer_count() -> None:
    assert must_alloc(make_pool(4), np.int64(2)).tolist() == [0, 1]


def test_returned_arrays_belong_to_the_caller() -> None:
    pool = make_pool(4)
    slots = must_alloc(pool, 2)
    slots[0] = 3  # scribbling on the result must not corrupt the pool
    pool.free(ids(1))
    pool.check(ids(0))


def test_empty_pool() -> None:
    pool = make_pool(0, page_size=4)
    assert pool.num_pages == 0
    assert must_alloc(pool, 0).tolist() == []
    assert pool.alloc(1) is None
    pool.free(ids())
    pool.check(ids())
    with pytest.raises(InvalidSlotsError, match="no slots"):
        pool.free(ids(0, 1, 2, 3))


# ---------------------------------------------------------------------- FIFO reuse


def test_freed_slots_are_reused_fifo() -> None:
    pool = make_pool(6)
    must_alloc(pool, 4)  # 4 and 5 stay free, at the front of the queue
    pool.free(ids(2, 0))
    pool.free(ids(3))
    assert must_alloc(pool, 5).tolist() == [4, 5, 2, 0, 3]
    pool.free(ids(1))
    assert must_alloc(pool, 1).tolist() == [1]


def test_freed_pages_are_reused_fifo() -> None:
    pool = make_pool(12, page_size=4)
    must_alloc(pool, 12)
    pool.free(ids(8, 9, 10, 11, 0, 1, 2, 3))
    pool.free(ids(4, 5, 6, 7))
    assert must_alloc(pool, 12).tolist() == [8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7]


def test_queue_wraps_around_the_ring() -> None:
    pool = make_pool(5)
    live: deque[int] = deque()
    expected_next = 0
    for _ in range(20):  # alloc 3, free the oldest 3, many times: head and tail wrap
        slots = must_alloc(pool, 3)
        assert slots.tolist() == [(expected_next + i) % 5 for i in range(3)]
        expected_next = (expected_next + 3) % 5
        live.extend(slots.tolist())
        pool.free(ids(*(live.popleft() for _ in range(3))))
        pool.check(ids(*live))


def test_reset_frees_everything_and_restarts_ascending() -> None:
    pool = make_pool(8, page_size=2)
    must_alloc(pool, 4)
    pool.free(ids(0, 1))
    pool.reset()
    assert pool.available == 8
    assert pool.snapshot() == make_pool(8, page_size=2).snapshot()
    assert must_alloc(pool, 8).tolist() == list(range(8))


def test_is_allocated_per_slot() -> None:
    pool = make_pool(8, page_size=2)
    must_alloc(pool, 3)  # pages 0 and 1 -> slots 0..3
    result = pool.is_allocated(ids(0, 3, 4, 7))
    assert result.dtype == np.bool_
    assert result.tolist() == [True, True, False, False]
    with pytest.raises(InvalidSlotsError, match="foreign"):
        pool.is_allocated(ids(8))


# ---------------------------------------------------------------------- refused frees


def paged_pool_for_bad_frees() -> SlotPool:
    """16 slots, page_size 4: pages 0 and 1 allocated, page 2 freed once, page 3 never used."""
    pool = make_pool(16, page_size=4)
    must_alloc(pool, 12)
    pool.free(ids(8, 9, 10, 11))
    return pool


HELD_AFTER_SETUP = ids(0, 1, 2, 3, 4, 5, 6, 7)

BAD_FREES: list[tuple[str, object, type[Exception], str]] = [
    (
        "double-free",
        ids(0, 1, 2, 3, 8, 9, 10, 11),
        InvalidSlotsError,
        r"slots\[4\] = 8: it is already free \(double free\)",
    ),
    ("never-allocated", ids(12, 13, 14, 15), InvalidSlotsError, "never allocated"),
    (
        "foreign-slot",
        ids(0, 1, 2, 3, 16, 17, 18, 19),
        InvalidSlotsError,
        r"slots\[4\] = 16 is a foreign slot: this pool has slots 0\.\.15",
    ),
    ("partial-page-length", ids(0, 1), InvalidSlotsError, "not a whole number of pages"),
    (
        "partial-page-misaligned",
        ids(1, 2, 3, 4),
        InvalidSlotsError,
        r"slots\[0\] = 1 does not start a page",
    ),
    (
        "partial-page-out-of-order",
        ids(0, 1, 2, 3, 4, 5, 7, 6),
        InvalidSlotsError,
        r"slots\[6\] = 7 should be 6 to continue page 1",
    ),
    (
        "duplicate-in-one-call",
        ids(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3),
        InvalidSlotsError,
        r"page 0 \(slots 0\.\.3\) twice in one call: it is at slots\[(0|8)\] and slots\[(8|0)\]",
    ),
    ("float-dtype", np.array([0.0, 1.0, 2.0, 3.0]), InvalidSlotsError, "integer dtype"),
    ("bool-dtype", np.ones(4, dtype=np.bool_), InvalidSlotsError, "integer dtype"),
    ("list", [0, 1, 2, 3], InvalidSlotsTypeError, "numpy array"),
    ("negative", ids(0, 1, 2, -3), InvalidSlotsError, "negative"),
    ("two-dimensional", ids(0, 1, 2, 3).reshape(1, 4), InvalidSlotsError, "1-D"),
]


@pytest.mark.parametrize(
    ("slots", "error", "message"),
    [case[1:] for case in BAD_FREES],
    ids=[case[0] for case in BAD_FREES],
)
def test_bad_free_raises_and_changes_nothing(
    slots: object, error: type[Exception], message: str
) -> None:
    pool = paged_pool_for_bad_frees()
    pool.check(HELD_AFTER_SETUP)
    before = pool.snapshot()
    with pytest.raises(error, match=message):
        pool.free(slots)
    assert pool.snapshot() == before
    pool.check(HELD_AFTER_SETUP)
    # The pool still works as before: the valid pages free normally afterwards.
    pool.free(HELD_AFTER_SETUP)
    pool.check(ids())


def test_duplicate_slot_in_one_call_at_page_size_one() -> None:
    pool = make_pool(4)
    must_alloc(pool, 4)
    before = pool.snapshot()
    with pytest.raises(InvalidSlotsError, match="slot 2 twice in one call"):
        pool.free(ids(1, 2, 3, 2))
    assert pool.snapshot() == before


def test_double_free_after_reuse_is_still_caught() -> None:
    pool = make_pool(2)
    first = must_alloc(pool, 2)
    pool.free(first)
    second = must_alloc(pool, 1)
    pool.free(second)
    with pytest.raises(InvalidSlotsError, match="double free"):
        pool.free(second)


@pytest.mark.parametrize("page_size", [1, 4])
def test_free_pages_returns_page_ids_like_free(page_size: int) -> None:
    pool, twin = make_pool(16, page_size), make_pool(16, page_size)
    slots, same = must_alloc(pool, 12), must_alloc(twin, 12)
    pool.free_pages(pool.pages_of(slots[page_size:]))
    twin.free(same[page_size:])
    assert pool.snapshot() == twin.snapshot()
    pool.check(slots[:page_size])


@pytest.mark.parametrize("pages", [ids(0, 0), ids(2), ids(1, 3)])
def test_free_pages_guards_against_pages_not_held(pages: SlotArray) -> None:
    pool = make_pool(8, 2)
    must_alloc(pool, 4)  # pages 0 and 1
    before = pool.snapshot()
    with pytest.raises(InvariantError, match="does not hold"):
        pool.free_pages(pages)
    assert pool.snapshot() == before


@pytest.mark.parametrize("pages", [ids(2), ids(1, 3), ids(0, 2)])
def test_free_pages_of_distinct_pages_still_refuses_a_page_not_held(pages: SlotArray) -> None:
    """``distinct`` skips only the repeat check: a page not allocated is still refused."""
    pool = make_pool(8, 2)
    must_alloc(pool, 4)  # pages 0 and 1
    before = pool.snapshot()
    with pytest.raises(InvariantError, match="does not hold"):
        pool.free_pages(pages, distinct=True)
    assert pool.snapshot() == before
    pool.free_pages(ids(1, 0), distinct=True)
    twin = make_pool(8, 2)
    twin.free(must_alloc(twin, 4)[[2, 3, 0, 1]])
    assert pool.snapshot() == twin.snapshot()


def test_bad_free_errors_are_value_errors() -> None:
    pool = make_pool(4)
    with pytest.raises(ValueError):
        pool.free(ids(0))


# ---------------------------------------------------------------------- check()


def test_check_passes_on_exact_ownership() -> None:
    pool = make_pool(16, page_size=4)
    a = must_alloc(pool, 5)
    b = must_alloc(pool, 4)
    pool.check(np.concatenate((b, a)))
    pool.check(np.concatenate((a, b)).astype(np.int32))


def test_check_catches_a_leaked_slot() -> None:
    pool = make_pool(8)
    a = must_alloc(pool, 3)
    with pytest.raises(InvariantError, match="slot 2 is allocated but held by nobody"):
        pool.check(a[:2])


def test_check_catches_a_double_owned_slot() -> None:
    pool = make_pool(8)
    a = must_alloc(pool, 3)
    with pytest.raises(InvariantError, match="slot 1 is held 2 times"):
        pool.check(np.concatenate((a, a[1:2])))


def test_check_catches_a_held_slot_that_is_free() -> None:
    pool = make_pool(8)
    a = must_alloc(pool, 3)
    pool.free(a[2:])
    with pytest.raises(InvariantError, match="slot 2 is held but free"):
        pool.check(a)


def test_check_catches_foreign_and_negative_held_ids() -> None:
    pool = make_pool(8)
    with pytest.raises(InvariantError, match="foreign"):
        pool.check(ids(8))
    with pytest.raises(InvariantError, match="negative"):
        pool.check(ids(-1))


def test_check_refuses_a_held_list() -> None:
    with pytest.raises(InvalidSlotsTypeError):
        make_pool(8).check([0])


def test_check_catches_a_corrupted_ring() -> None:
    pool = make_pool(8, page_size=2)
    held = must_alloc(pool, 4)
    pool._allocated[3] = True  # page 3: allocated and still queued as free
    with pytest.raises(InvariantError, match=r"page 3 .* is both allocated and queued"):
        pool.check(held)
    pool._allocated[3] = False
    pool._count -= 1  # drop the last queued page: it becomes neither free nor allocated
    with pytest.raises(InvariantError, match=r"page 3 .*\(lost\)"):
        pool.check(held)


def test_ever_allocated_marks_the_pages_handed_out_since_the_reset() -> None:
    pool = make_pool(8, page_size=2)  # 4 pages
    first = must_alloc(pool, 4)  # pages 0 and 1
    assert pool.ever_allocated.tolist() == [True, True, False, False]
    pool.free(first)  # back at the ring's tail: still "ever"
    assert pool.ever_allocated.tolist() == [True, True, False, False]
    must_alloc(pool, 8)  # pages 2, 3, then 0, 1 again from the tail
    assert pool.ever_allocated.tolist() == [True] * 4
    pool.reset()
    assert pool.ever_allocated.tolist() == [False] * 4


def test_check_catches_never_handed_out_pages_out_of_place() -> None:
    pool = make_pool(8, page_size=2)
    held = must_alloc(pool, 2)  # page 0; pages 1..3 never handed out
    pool._queue[[2, 3]] = pool._queue[[3, 2]]  # swap two of them in the ring
    with pytest.raises(InvariantError, match=r"3 pages were never handed out"):
        pool.check(held)


def test_paged_slots_are_freed_from_real_torch_tensors() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed (optional extra)")
    pool = make_pool(16, page_size=4)
    slots = must_alloc(pool, 8)
    pool.free(torch.from_numpy(slots[4:]).to(torch.int32))
    pool.check(slots[:4])


# ---------------------------------------------------------------------- model-based


class SlotPoolMachine(RuleBasedStateMachine):
    """Random alloc/free/reset sequences against a model: a set of allocated slots, a FIFO deque
    of free pages, and the list of owners (each a list of pages)."""

    pool: SlotPool
    page_size: int
    num_pages: int
    free_queue: deque[int]
    allocated_slots: set[int]
    owners: list[list[int]]
    ever: set[int]

    @initialize(page_size=st.sampled_from([1, 2, 4]), num_pages=st.integers(0, 12))
    def setup(self, page_size: int, num_pages: int) -> None:
        self.pool = make_pool(page_size * num_pages, page_size)
        self.page_size = page_size
        self.num_pages = num_pages
        self.free_queue = deque(range(num_pages))
        self.allocated_slots = set()
        self.owners = []
        self.ever = set()

    def slots_of(self, pages: list[int]) -> SlotArray:
        p = self.page_size
        return np.array([page * p + i for page in pages for i in range(p)], dtype=np.int64)

    @rule(num_tokens=st.integers(0, 50))
    def alloc(self, num_tokens: int) -> None:
        needed = -(-num_tokens // self.page_size)
        before = self.pool.snapshot()
        slots = self.pool.alloc(num_tokens)
        if needed > len(self.free_queue):
            assert slots is None
            assert self.pool.snapshot() == before
            return
        pages = [self.free_queue.popleft() for _ in range(needed)]
        assert slots is not None
        assert slots.dtype == np.int64
        assert slots.tolist() == self.slots_of(pages).tolist()
        assert self.allocated_slots.isdisjoint(slots.tolist())
        self.allocated_slots.update(slots.tolist())
        self.ever.update(pages)
        if pages:
            self.owners.append(pages)

    @precondition(lambda self: bool(self.owners))
    @rule(data=st.data())
    def free(self, data: st.DataObject) -> None:
        owner = data.draw(st.integers(0, len(self.owners) - 1))
        shuffled = data.draw(st.permutations(self.owners[owner]))
        count = data.draw(st.integers(1, len(shuffled)))
        pages = shuffled[:count]
        slots = self.slots_of(pages)
        dtype = data.draw(st.sampled_from([np.int64, np.int32, np.uint32]))
        self.pool.free(slots.astype(dtype))
        self.free_queue.extend(pages)
        self.allocated_slots.difference_update(slots.tolist())
        self.owners[owner] = [page for page in self.owners[owner] if page not in pages]
        if not self.owners[owner]:
            del self.owners[owner]

    @precondition(lambda self: self.num_pages > 0)
    @rule(data=st.data())
    def bad_free(self, data: st.DataObject) -> None:
        p = self.page_size
        owned = [page for pages in self.owners for page in pages]
        kinds = ["foreign"]
        if self.free_queue:
            kinds.append("free-page")
        if owned:
            kinds.append("duplicate")
            if p > 1:
                kinds.append("partial")
        kind = data.draw(st.sampled_from(kinds))
        good = data.draw(st.lists(st.sampled_from(owned), unique=True)) if owned else []
        if kind == "foreign":
            bad = np.arange(self.num_pages * p, self.num_pages * p + p, dtype=np.int64)
        elif kind == "free-page":
            bad = self.slots_of([data.draw(st.sampled_from(list(self.free_queue)))])
        elif kind == "duplicate":
            page = data.draw(st.sampled_from(owned))
            bad = self.slots_of([page])
            good = [*good, page]
        else:
            bad = self.slots_of([data.draw(st.sampled_from(owned))])[: p - 1]
        slots = np.concatenate((self.slots_of(good), bad))
        before = self.pool.snapshot()
        # a free page is told apart: freed since it was handed out, or never handed out
        why = None if kind != "free-page" else (
            "double free" if int(bad[0]) // p in self.ever else "never allocated")
        with pytest.raises(InvalidSlotsError, match=why):
            self.pool.free(slots)
        assert self.pool.snapshot() == before

    @rule()
    def reset(self) -> None:
        self.pool.reset()
        self.free_queue = deque(range(self.num_pages))
        self.allocated_slots = set()
        self.owners = []
        self.ever = set()

    @invariant()
    def pool_matches_model(self) -> None:
        held = self.slots_of([page for pages in self.owners for page in pages])
        self.pool.check(held)
        assert set(held.tolist()) == self.allocated_slots
        assert self.pool.num_free_pages == len(self.free_queue)
        assert self.pool.available == len(self.free_queue) * self.page_size
        assert self.pool.allocated == len(self.allocated_slots)
        every_slot = np.arange(self.pool.capacity, dtype=np.int64)
        expected = [slot in self.allocated_slots for slot in range(self.pool.capacity)]
        assert self.pool.is_allocated(every_slot).tolist() == expected
        queue_bytes = np.array(list(self.free_queue), dtype=np.int64).tobytes()
        assert self.pool.snapshot()[4] == queue_bytes
        ever = np.array([page in self.ever for page in range(self.num_pages)], dtype=np.bool_)
        assert self.pool.snapshot()[3] == ever.tobytes()


SlotPoolMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
test_slot_pool_against_model = SlotPoolMachine.TestCase
