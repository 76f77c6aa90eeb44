"""Validate before mutate: every bad call raises a typed error and changes nothing.

Each test puts a cache in a non-trivial state (finished requests in several namespaces, an
active lease that borrowed a cached prefix and holds a lock, a user lock), takes
``cache.snapshot()``, makes one bad call, and checks the exception class (a
:class:`~radixkv.errors.RadixKVError`, and the built-in category ``errors.py`` promises), that
the snapshot is unchanged, that ``check_invariants()`` passes, and that the cache still works.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from radixkv.cache import CacheConfig, Lease, LeaseState, PrefixCache
from radixkv.core.policy import POLICIES
from radixkv.core.types import Lock, NodeId
from radixkv.errors import (
    ConfigError,
    InvalidArgumentError,
    InvalidNamespaceError,
    InvalidSlotsError,
    InvalidSlotsTypeError,
    InvalidTokensError,
    LeaseError,
    LockError,
    OutOfSlotsError,
    RadixKVError,
    StaleHandleError,
)
from radixkv.memory import SlotPool, SlotPoolConfig

SYSTEM = [9, 8, 7, 6, 5, 4, 3, 2]
CAPACITY = 64


@dataclass
class Busy:
    cache: PrefixCache
    active: Lease
    user_lock: Lock
    page: int


def build(page: int) -> Busy:
    cache = PrefixCache(CacheConfig(capacity=CAPACITY, page_size=page))
    finished = [
        ([*SYSTEM, 1, 2, 3, 4], None),
        ([*SYSTEM, 5, 6, 7, 8, 9], None),
        ([3, 3, 3, 3, 1, 1, 1, 1], ("lora", 1)),
        ([*SYSTEM, 2, 2, 2, 2], (None, "tenant")),
    ]
    for prompt, namespace in finished:
        cache.finish(cache.admit(prompt, namespace))
    active = cache.admit([*SYSTEM, 1, 2, 3, 4, 7, 7, 7, 7, 7])
    assert active.cached_length == 12 and active.lock is not None
    cache.extend(active, [1, 2])
    found = cache.match([*SYSTEM, 5, 6, 7, 8])
    assert found.length == 12 and found.node is not None
    user_lock = cache.lock(found.node)
    cache.check_invariants()
    return Busy(cache, active, user_lock, page)


@pytest.fixture(params=[1, 4], ids=["page1", "page4"])
def busy(request: pytest.FixtureRequest) -> Busy:
    return build(request.param)


def rejected(
    cache: PrefixCache, error: type[Exception], call: Callable[[], Any], *also: type
) -> Exception:
    """``call()`` raises ``error`` (a RadixKVError, and each of ``also``) and the cache is
    exactly as before."""
    snap = cache.snapshot()
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, RadixKVError)
    for base in also:
        assert isinstance(info.value, base), f"{type(info.value).__name__} is no {base.__name__}"
    assert cache.snapshot() == snap, "a rejected call changed the cache"
    cache.check_invariants()
    return info.value


def still_works(busy: Busy) -> None:
    """A good request after the failure is served normally, and the state set up by
    ``build`` can still be released."""
    cache = busy.cache
    lease = cache.admit([*SYSTEM, 1, 2, 3, 4, 5])
    assert lease.cached_length == 12
    cache.extend(lease, [6, 7, 8])
    assert cache.finish(lease) == 16
    if busy.active.state is LeaseState.ACTIVE:
        cache.finish(busy.active)
    if busy.user_lock.id in cache.tree.live_locks:
        cache.unlock(busy.user_lock)
    cache.check_invariants()
    stats = cache.stats()
    assert stats.active_leases == 0 and stats.components["full"].protected == 0
    assert stats.available + stats.components["full"].cached == CAPACITY
    assert cache.match([*SYSTEM, 1, 2, 3, 4, 5, 6, 7, 8]).length == 16


# ---------------------------------------------------------------------- tokens

BAD_TOKENS = {
    "floats": [1.0, 2.0],
    "float-mixed": [1, 2.5],
    "float-array": np.array([1.0, 2.0]),
    "strings": ["a", "b"],
    "digit-strings": ["1", "2"],
    "str": "abc",
    "bytes": b"\x01\x02",
    "none": None,
    "none-inside": [1, None],
    "nested-2d": [[1, 2], [3, 4]],
    "nested-ragged": [[1], [2, 3]],
    "nested-mixed": [1, [2]],
    "2d-array": np.array([[1, 2], [3, 4]]),
    "0d-array": np.array(5),
    "scalar-int": 5,
    "numpy-scalar": np.int64(3),
    "set": {1, 2},
    "object": object(),
    "object-array": np.array([1, 2], dtype=object),
    "negative": [1, -1],
    "negative-array": np.array([3, -5], dtype=np.int64),
    "too-big": [0, 2**32],
    "too-big-uint64": np.array([2**32 + 7], dtype=np.uint64),
    "way-too-big": [2**64],
    "bool-array": np.array([True, False]),
    "bool-list": [True, False],
    "complex": [1 + 2j],
}


@pytest.mark.parametrize("tokens", BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
@pytest.mark.parametrize("entry", ["match", "admit", "admit-ns", "extend"])
def test_bad_tokens(busy: Busy, entry: str, tokens: Any) -> None:
    cache = busy.cache
    calls: dict[str, Callable[[], Any]] = {
        "match": lambda: cache.match(tokens),
        "admit": lambda: cache.admit(tokens),
        "admit-ns": lambda: cache.admit(tokens, ("lora", 1)),
        "extend": lambda: cache.extend(busy.active, tokens),
    }
    rejected(cache, InvalidTokensError, calls[entry], ValueError)
    still_works(busy)


def test_good_token_types_are_equivalent(busy: Busy) -> None:
    """The accepted spellings of the same tokens match the same prefix (sanity for the
    rejection tests above)."""
    prompt = [*SYSTEM, 1, 2, 3, 4]
    for spelling in (
        prompt,
        tuple(prompt),
        np.array(prompt, dtype=np.int64),
        np.array(prompt, dtype=np.uint32),
        np.array(prompt, dtype=np.uint16),
        np.array(prompt, dtype=">i8"),
    ):
        assert busy.cache.match(spelling).length == 12
    still_works(busy)


# ---------------------------------------------------------------------- namespaces

BAD_NAMESPACES = {
    "list": ["lora", 1],
    "3-tuple": ("lora", 1, 2),
    "1-tuple": ("lora",),
    "empty-tuple": (),
    "float-part": (1.5, None),
    "float-salt": (None, 2.5),
    "bool-part": (True, None),
    "bytes-part": (b"lora", None),
    "list-part": (["lora"], None),
    "str": "lora",
    "int": 7,
    "numpy-part": (np.int64(1), None),
}


@pytest.mark.parametrize("namespace", BAD_NAMESPACES.values(), ids=BAD_NAMESPACES.keys())
@pytest.mark.parametrize("entry", ["match", "admit"])
def test_bad_namespace(busy: Busy, entry: str, namespace: Any) -> None:
    cache = busy.cache
    if entry == "match":
        rejected(cache, InvalidNamespaceError, lambda: cache.match(SYSTEM, namespace), ValueError)
    else:
        rejected(cache, InvalidNamespaceError, lambda: cache.admit(SYSTEM, namespace), ValueError)
    still_works(busy)


# ---------------------------------------------------------------------- handles and locks


def test_lock_stale_handle_after_eviction(busy: Busy) -> None:
    cache = busy.cache
    cache.finish(cache.admit([0, 0, 0, 0, 1, 1, 1, 1]))
    found = cache.match([0, 0, 0, 0, 1, 1, 1, 1])
    assert found.node is not None and found.length == 8
    cache.evict(CAPACITY)  # everything unlocked goes
    assert cache.match([0, 0, 0, 0, 1, 1, 1, 1]).length == 0
    error = rejected(cache, StaleHandleError, lambda: cache.lock(found.node), LookupError)
    assert str(found.node) in str(error)
    # the same tokens cached again get a new node: the old handle stays stale
    cache.finish(cache.admit([0, 0, 0, 0, 1, 1, 1, 1]))
    again = cache.match([0, 0, 0, 0, 1, 1, 1, 1])
    assert again.node is not None and again.node != found.node
    rejected(cache, StaleHandleError, lambda: cache.lock(found.node), LookupError)
    still_works(busy)


def test_lock_stale_handle_after_reset(busy: Busy) -> None:
    cache = busy.cache
    found = cache.match([*SYSTEM, 1, 2, 3, 4])
    assert found.node is not None
    old_ids = set(cache.tree.nodes)
    cache.reset()
    rejected(cache, StaleHandleError, lambda: cache.lock(found.node), LookupError)
    cache.finish(cache.admit([*SYSTEM, 1, 2, 3, 4]))
    cache.finish(cache.admit([*SYSTEM, 5, 6, 7, 8]))
    assert old_ids.isdisjoint(cache.tree.nodes), "a node handle was reused after reset()"
    for node_id in old_ids:
        rejected(cache, StaleHandleError, lambda n=node_id: cache.lock(NodeId(n)), LookupError)
    # the receipts and leases from before the reset are dead too
    rejected(cache, LockError, lambda: cache.unlock(busy.user_lock), ValueError)
    assert busy.active.state is LeaseState.INVALIDATED
    for op in ("finish", "abort", "commit"):
        rejected(cache, LeaseError, lambda op=op: getattr(cache, op)(busy.active), ValueError)
    rejected(cache, LeaseError, lambda: cache.extend(busy.active, [1]), ValueError)
    lease = cache.admit([*SYSTEM, 1, 2, 3, 4, 5])
    assert lease.cached_length == 12
    cache.finish(lease)
    cache.check_invariants()


@pytest.mark.parametrize("handle", [None, "7", 1.5, [3], -1, 10**9], ids=repr)
def test_lock_bad_handle(busy: Busy, handle: Any) -> None:
    rejected(busy.cache, RadixKVError, lambda: busy.cache.lock(handle))
    still_works(busy)


def test_lock_bool_handle_is_not_a_node_id(busy: Busy) -> None:
    """``True == 1``: a bool is never a handle, whatever ids are live."""
    cache = busy.cache
    for flag in (True, False):
        rejected(cache, RadixKVError, lambda flag=flag: cache.lock(flag))  # type: ignore[misc]
    still_works(busy)


def test_double_unlock(busy: Busy) -> None:
    cache = busy.cache
    cache.unlock(busy.user_lock)
    cache.check_invariants()
    rejected(cache, LockError, lambda: cache.unlock(busy.user_lock), ValueError)
    still_works(busy)


def test_unlock_receipt_of_another_cache(busy: Busy) -> None:
    other = build(busy.page)
    cache = busy.cache
    assert other.user_lock.id == busy.user_lock.id  # same id, different cache
    rejected(cache, LockError, lambda: cache.unlock(other.user_lock), ValueError)
    assert other.active.lock is not None
    rejected(cache, LockError, lambda: cache.unlock(other.active.lock), ValueError)
    rejected(other.cache, LockError, lambda: other.cache.unlock(busy.user_lock), ValueError)
    still_works(busy)
    still_works(other)


@pytest.mark.parametrize("receipt", [None, 1, "lock", object()], ids=repr)
def test_unlock_not_a_receipt(busy: Busy, receipt: Any) -> None:
    rejected(busy.cache, LockError, lambda: busy.cache.unlock(receipt), ValueError)
    still_works(busy)


def test_unlocking_a_leases_own_lock_cannot_poison_the_cache(busy: Busy) -> None:
    """The receipt of a lease's lock is reachable as ``lease.lock``. Releasing it with
    ``unlock`` must either be refused, or leave the lease usable: a later finish must not
    half-run (insert, free) and then raise, leaving the cache inconsistent."""
    cache = busy.cache
    lease = busy.active
    assert lease.lock is not None
    snap = cache.snapshot()
    try:
        cache.unlock(lease.lock)
    except LockError:
        assert cache.snapshot() == snap
        cache.check_invariants()
        still_works(busy)
        return
    snap = cache.snapshot()
    try:
        cache.finish(lease)
    except RadixKVError:
        assert cache.snapshot() == snap, "finish raised after changing the cache"
    cache.check_invariants()


# ---------------------------------------------------------------------- leases


def _lease_ops(cache: PrefixCache, lease: Any) -> dict[str, Callable[[], Any]]:
    return {
        "finish": lambda: cache.finish(lease),
        "abort": lambda: cache.abort(lease),
        "extend": lambda: cache.extend(lease, [1, 2, 3]),
        "commit": lambda: cache.commit(lease),
        "commit-length": lambda: cache.commit(lease, 0),
    }


OPS = ["finish", "abort", "extend", "commit", "commit-length"]


@pytest.mark.parametrize("op", OPS)
def test_ops_on_finished_lease(busy: Busy, op: str) -> None:
    cache = busy.cache
    lease = cache.admit([*SYSTEM, 5, 6, 7, 8, 1])
    cache.finish(lease)
    assert lease.state is LeaseState.FINISHED
    rejected(cache, LeaseError, _lease_ops(cache, lease)[op], ValueError)
    still_works(busy)


@pytest.mark.parametrize("op", OPS)
def test_ops_on_aborted_lease(busy: Busy, op: str) -> None:
    cache = busy.cache
    lease = cache.admit([*SYSTEM, 5, 6, 7, 8, 1])
    cache.abort(lease)
    assert lease.state is LeaseState.ABORTED
    rejected(cache, LeaseError, _lease_ops(cache, lease)[op], ValueError)
    still_works(busy)


def test_double_finish_of_busy_lease(busy: Busy) -> None:
    cache = busy.cache
    cache.finish(busy.active)
    rejected(cache, LeaseError, lambda: cache.finish(busy.active), ValueError)
    rejected(cache, LeaseError, lambda: cache.abort(busy.active), ValueError)
    still_works(busy)


@pytest.mark.parametrize("op", OPS)
def test_ops_on_lease_of_another_cache(busy: Busy, op: str) -> None:
    other = build(busy.page)
    assert other.active.id == busy.active.id  # same id, different cache
    rejected(busy.cache, LeaseError, _lease_ops(busy.cache, other.active)[op], ValueError)
    rejected(other.cache, LeaseError, _lease_ops(other.cache, busy.active)[op], ValueError)
    still_works(busy)
    still_works(other)


@pytest.mark.parametrize("lease", [None, 1, "lease", object()], ids=repr)
@pytest.mark.parametrize("op", OPS)
def test_ops_on_non_lease(busy: Busy, op: str, lease: Any) -> None:
    rejected(busy.cache, LeaseError, _lease_ops(busy.cache, lease)[op])
    still_works(busy)


@pytest.mark.parametrize("length", [-1, "too-long", 1.0, "3", True, [2]], ids=repr)
def test_commit_bad_length(busy: Busy, length: Any) -> None:
    cache = busy.cache
    if length == "too-long":
        length = busy.active.num_tokens + 1
    rejected(cache, InvalidArgumentError, lambda: cache.commit(busy.active, length), ValueError)
    still_works(busy)


@pytest.mark.parametrize("num_tokens", [-1, 1.5, "3", None, True, [1]], ids=repr)
def test_evict_bad_count(busy: Busy, num_tokens: Any) -> None:
    rejected(busy.cache, InvalidArgumentError, lambda: busy.cache.evict(num_tokens), ValueError)
    still_works(busy)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"priority": 1.5},
        {"priority": "high"},
        {"priority": True},
        {"priority": None},
        {"ttl": -1},
        {"ttl": 2.0},
        {"ttl": "long"},
    ],
    ids=repr,
)
def test_admit_bad_priority_or_ttl(busy: Busy, kwargs: dict[str, Any]) -> None:
    cache = busy.cache
    rejected(cache, InvalidArgumentError, lambda: cache.admit([*SYSTEM, 1], **kwargs), ValueError)
    still_works(busy)


# ---------------------------------------------------------------------- out of slots


def test_admit_that_cannot_fit(busy: Busy) -> None:
    cache = busy.cache
    page = busy.page
    stats = cache.stats()
    room = stats.available + stats.components["full"].evictable
    # shares SYSTEM (cached, unlocked here) so a partial admission would touch recency
    prompt = SYSTEM + [0] * (room + page)
    error = rejected(cache, OutOfSlotsError, lambda: cache.admit(prompt), MemoryError)
    assert "need" in str(error)
    # a novel prompt in a fresh namespace, too: no root may appear
    rejected(cache, OutOfSlotsError, lambda: cache.admit([0] * (room + page), ("new", 0)))
    # just fitting works: evicts everything evictable except the matched path
    match = cache.match(SYSTEM)
    assert match.length == 8
    lease = cache.admit(SYSTEM + [0] * (room - 2 * page))
    assert lease.cached_length == 8
    cache.abort(lease)
    cache.check_invariants()
    still_works(busy)


def test_extend_that_cannot_fit(busy: Busy) -> None:
    cache = busy.cache
    stats = cache.stats()
    room = stats.available + stats.components["full"].evictable
    rejected(
        cache,
        OutOfSlotsError,
        lambda: cache.extend(busy.active, [0] * (room + 2 * busy.page)),
        MemoryError,
    )
    assert busy.active.num_tokens == 19
    still_works(busy)


# ---------------------------------------------------------------------- configuration


@pytest.mark.parametrize("page_size", [0, -1, -4, 1.5, 4.0, "4", None, True], ids=repr)
def test_config_bad_page_size(page_size: Any) -> None:
    with pytest.raises(ConfigError) as info:
        CacheConfig(capacity=64, page_size=page_size)
    assert isinstance(info.value, (RadixKVError, ValueError))


@pytest.mark.parametrize("policy", ["lru2", "LRU", "", "random"], ids=repr)
def test_config_unknown_policy_lists_valid_names(policy: str) -> None:
    with pytest.raises(ConfigError) as info:
        CacheConfig(capacity=64, policy=policy)
    assert isinstance(info.value, ValueError)
    for name in POLICIES:
        assert name in str(info.value)


@pytest.mark.parametrize("policy", [None, 3, ["lru"], ("lru",)], ids=repr)
def test_config_policy_not_a_string(policy: Any) -> None:
    with pytest.raises(ConfigError):
        CacheConfig(capacity=64, policy=policy)


@pytest.mark.parametrize(
    ("capacity", "page_size"),
    [(10, 4), (6, 4), (1, 2), (-4, 4), (-1, 1), (64.0, 4), ("64", 1), (None, 1), (True, 1)],
    ids=repr,
)
def test_config_bad_capacity(capacity: Any, page_size: int) -> None:
    with pytest.raises(ConfigError):
        CacheConfig(capacity=capacity, page_size=page_size)


@pytest.mark.parametrize(
    "components",
    [
        ("swa", "mamba"),
        ("swa",),
        ("mamba",),
        (),
        ("full", "full"),
        ("swa", "full"),
        "full",
        ("FULL",),
        None,
        5,
    ],
    ids=repr,
)
def test_config_unsupported_components(components: Any) -> None:
    with pytest.raises(ConfigError) as info:
        CacheConfig(capacity=64, components=components)
    assert "supported" in str(info.value)


@pytest.mark.parametrize("ttl", [-1, 1.5, "long", None], ids=repr)
def test_config_bad_default_ttl(ttl: Any) -> None:
    with pytest.raises(ConfigError):
        CacheConfig(capacity=64, default_ttl=ttl)


@pytest.mark.parametrize("config", [None, {"capacity": 64}, 64], ids=repr)
def test_cache_needs_a_config(config: Any) -> None:
    with pytest.raises(RadixKVError):  # a ConfigError, or a TypeError under RadixKVError
        PrefixCache(config)


# ---------------------------------------------------------------------- the slot pool


def make_pool() -> tuple[SlotPool, np.ndarray, np.ndarray]:
    """A pool of 8 pages of 4 slots, with pages allocated, freed and reallocated."""
    pool = SlotPool(SlotPoolConfig(capacity=32, page_size=4))
    held = pool.alloc(12)
    freed = pool.alloc(8)
    assert held is not None and freed is not None
    pool.free(freed)
    more = pool.alloc(4)
    assert more is not None
    pool.check(np.concatenate((held, more)))
    return pool, np.concatenate((held, more)), freed


BAD_FREES: dict[str, tuple[Callable[[np.ndarray, np.ndarray], Any], type[Exception]]] = {
    "list": (lambda held, freed: held.tolist(), InvalidSlotsTypeError),
    "tuple": (lambda held, freed: tuple(held.tolist()), InvalidSlotsTypeError),
    "none": (lambda held, freed: None, InvalidSlotsTypeError),
    "int": (lambda held, freed: int(held[0]), InvalidSlotsTypeError),
    "float-dtype": (lambda held, freed: held[:4].astype(np.float64), InvalidSlotsError),
    "bool-dtype": (lambda held, freed: np.ones(4, dtype=bool), InvalidSlotsError),
    "object-dtype": (lambda held, freed: held[:4].astype(object), InvalidSlotsError),
    "2d": (lambda held, freed: held[:8].reshape(2, 4), InvalidSlotsError),
    "partial-page": (lambda held, freed: held[:3], InvalidSlotsError),
    "misaligned": (lambda held, freed: held[1:5], InvalidSlotsError),
    "scrambled-page": (lambda held, freed: held[:4][::-1].copy(), InvalidSlotsError),
    "double-free": (lambda held, freed: freed[-4:], InvalidSlotsError),
    "never-allocated": (lambda held, freed: np.arange(28, 32), InvalidSlotsError),
    "foreign": (lambda held, freed: np.arange(32, 36), InvalidSlotsError),
    "negative": (lambda held, freed: np.array([-4, -3, -2, -1]), InvalidSlotsError),
    "same-page-twice": (
        lambda held, freed: np.concatenate((held[:4], held[:4])),
        InvalidSlotsError,
    ),
    "good-then-bad": (
        lambda held, freed: np.concatenate((held[:4], freed[-4:])),
        InvalidSlotsError,
    ),
}


@pytest.mark.parametrize("case", BAD_FREES.keys())
def test_pool_free_refused_changes_nothing(case: str) -> None:
    pool, held, freed = make_pool()
    make, error = BAD_FREES[case]
    slots = make(held, freed)
    snap = pool.snapshot()
    with pytest.raises(error) as info:
        pool.free(slots)
    assert isinstance(info.value, RadixKVError)
    assert isinstance(info.value, TypeError if error is InvalidSlotsTypeError else ValueError)
    assert pool.snapshot() == snap
    pool.check(held)
    pool.free(held)  # still works
    assert pool.available == pool.capacity
    pool.check(np.zeros(0, dtype=np.int64))


@pytest.mark.parametrize(
    ("num_tokens", "error"),
    [
        (-1, InvalidSlotsError),
        (1.5, InvalidSlotsTypeError),
        ("4", InvalidSlotsTypeError),
        (None, InvalidSlotsTypeError),
        (True, InvalidSlotsTypeError),
    ],
    ids=repr,
)
def test_pool_alloc_bad_count(num_tokens: Any, error: type[Exception]) -> None:
    pool, held, _ = make_pool()
    snap = pool.snapshot()
    with pytest.raises(error):
        pool.alloc(num_tokens)
    assert pool.snapshot() == snap
    pool.check(held)


def test_pool_alloc_too_much_returns_none_unchanged() -> None:
    pool, held, _ = make_pool()
    snap = pool.snapshot()
    assert pool.alloc(pool.available + 1) is None
    assert pool.snapshot() == snap
    pool.check(held)


def test_cache_pool_refuses_bad_frees(busy: Busy) -> None:
    """The cache's own pool refuses frees it can detect, leaving the cache intact."""
    cache, page = busy.cache, busy.page
    free_slot = cache.pool.alloc(page)
    assert free_slot is not None
    cache.pool.free(free_slot)  # now a page that is free: freeing it again is a double free
    cases = [
        (free_slot, InvalidSlotsError),
        (np.arange(CAPACITY, CAPACITY + page), InvalidSlotsError),
        (free_slot.tolist(), InvalidSlotsTypeError),
        (free_slot.astype(np.float32), InvalidSlotsError),
    ]
    if page > 1:
        cases.append((busy.active.own_slots[: page - 1].copy(), InvalidSlotsError))
    for slots, error in cases:
        rejected(cache, error, lambda s=slots: cache.pool.free(s))
    still_works(busy)
