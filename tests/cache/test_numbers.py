"""Numbers are converted to Python ints once, at the boundary (issue 11, item 3).

Each test hands an entry point a numpy integer scalar that passes the range check but would
wrap inside later arithmetic (4 bytes a token, whole pages, tick + ttl) if it travelled on as
a numpy value, and checks the exact outcome a Python int of the same value gives. Every
mutating call is audited.
"""

from __future__ import annotations

import numpy as np
import pytest

from radixkv import Allocation, CacheConfig, HostTier, SlidingWindow
from radixkv.cache.cache_config import MAX_PAGE_SIZE
from radixkv.errors import AllocationError, ConfigError, InvalidArgumentError

from ..audited import AuditedCache, assert_refused


def seq(start: int, n: int) -> list[int]:
    return list(range(start, start + n))


def test_commit_with_an_int8_length_caches_exactly_that_many_tokens() -> None:
    cache = AuditedCache(capacity=256)
    lease = cache.admit(seq(1, 120))
    assert cache.commit(lease, np.int8(40)) == 40
    assert lease.tree_owned == 40
    assert cache.match(seq(1, 120)).length == 40
    assert cache.finish(lease) == 120


@pytest.mark.parametrize("max_match", [np.uint8(70), np.int16(10000)], ids=["uint8", "int16"])
def test_admit_with_a_numpy_max_match_beyond_the_prompt_reuses_the_whole_prefix(
    max_match: np.integer,
) -> None:
    cache = AuditedCache(capacity=256)
    cache.finish(cache.admit(seq(1, 20)))
    lease = cache.admit([*seq(1, 20), 5], max_match=max_match)
    assert lease.cached_length == 20
    cache.finish(lease)


def test_slide_window_with_an_int8_count_releases_only_what_left_the_window() -> None:
    cache = AuditedCache(capacity=256, components=("full", "swa"), sliding_window=8)
    lease = cache.admit(seq(1, 120))
    assert cache.slide_window(lease, np.int8(40)) == 32
    assert lease.swa_dropped == 32
    assert len(lease.swa_slots) == 120 - 32
    cache.finish(lease)


def test_allocate_with_an_int8_count_allocates_whole_pages_for_it() -> None:
    cache = AuditedCache(capacity=256, page_size=16)
    held = cache.allocate(np.int8(120))
    assert held is not None and len(held.full) == 128
    assert cache.stats().available == 256 - 128
    cache.release(held)
    assert cache.stats().available == 256


def test_a_numpy_checkpoint_position_is_taken_as_the_int_and_finish_caches_it() -> None:
    cache = AuditedCache(capacity=64, page_size=4, components=("full", "mamba"),
                         mamba_track_interval=4, mamba_states=8)
    lease = cache.admit(seq(1, 10))
    slot = cache.checkpoint(lease, np.int64(8))
    assert list(lease.checkpoints) == [8] and type(next(iter(lease.checkpoints))) is int
    assert cache.finish(lease) == 8
    found = cache.match(seq(1, 10))
    assert (found.length, found.mamba_slot) == (8, slot)


def test_a_numpy_ttl_does_not_wrap_in_the_expiry_of_tlru() -> None:
    cache = AuditedCache(capacity=64, policy="tlru")
    cache.finish(cache.admit([1]))
    for _ in range(20):  # hits advance the clock: tick + ttl leaves int8's range
        cache.match([1])
    cache.finish(cache.admit(seq(100, 4), ttl=np.int8(120)))  # expires near tick 140
    cache.finish(cache.admit(seq(200, 4), ttl=5))  # expires near tick 26
    assert cache.evict(4)["full"] == 4
    assert cache.match(seq(100, 4)).length == 4  # the long-lived prompt survived
    assert cache.match(seq(200, 4)).length == 0


def test_stored_priorities_and_ttls_are_python_ints() -> None:
    cache = AuditedCache(capacity=64, policy="priority")
    lease = cache.admit(seq(1, 8), priority=np.int16(3), ttl=np.uint16(9))
    assert type(lease.priority) is int and type(lease.ttl) is int
    held = cache.allocate(np.int64(4))
    assert held is not None
    cache.insert(seq(50, 4), held, priority=np.int8(2), ttl=np.int32(7))
    cache.finish(lease)
    for node in cache.tree.nodes.values():
        assert type(node.priority) is int and type(node.ttl) is int


@pytest.mark.parametrize("budget", [np.uint8(200), np.int16(300)], ids=["uint8", "int16"])
def test_evict_with_a_numpy_budget_evicts_at_least_that_many(budget: np.integer) -> None:
    cache = AuditedCache(capacity=512)
    for start in range(0, 400, 40):
        cache.finish(cache.admit(seq(start + 1000, 40)))
    assert cache.evict(budget)["full"] == -(-int(budget) // 40) * 40  # whole leaves of 40
    assert cache.stats().components["full"].cached == 400 - cache.stats().evicted_tokens


@pytest.mark.parametrize("value", [np.float64(2.0), 2.0, "2", None, True, np.bool_(True)],
                         ids=["np-float", "float", "str", "none", "bool", "np-bool"])
def test_non_integers_are_refused_where_an_int_is_expected(value: object) -> None:
    cache = AuditedCache(capacity=64)
    lease = cache.admit(seq(1, 8))
    calls = [
        lambda: cache.allocate(value),
        lambda: cache.evict(value),
        lambda: cache.admit(seq(1, 4), priority=value),
    ]
    if value is not None:  # None means "the default" for these
        calls.append(lambda: cache.commit(lease, value))
        calls.append(lambda: cache.admit(seq(1, 4), max_match=value))
        calls.append(lambda: cache.admit(seq(1, 4), ttl=value))
    for call in calls:
        assert_refused(cache, InvalidArgumentError, call)
    cache.finish(lease)


# ---------------------------------------------------------------------- flags (item 2)


def mamba_cache() -> AuditedCache:
    return AuditedCache(capacity=64, page_size=4, components=("full", "mamba"),
                        mamba_track_interval=4, mamba_states=4)


@pytest.mark.parametrize("state", [-1, 2, 1, 0, 1.5, "yes", None, np.int64(1)],
                         ids=["-1", "2", "1", "0", "1.5", "str", "none", "np-int"])
def test_allocate_state_must_be_a_bool(state: object) -> None:
    cache = mamba_cache()
    held = cache.allocate(4, state=True)
    assert_refused(cache, InvalidArgumentError, lambda: cache.allocate(4, state=state),
                   "state must be a bool")
    assert cache.stats().components["mamba"].pool_available == 3
    assert held is not None
    cache.release(held)
    assert cache.stats().components["mamba"].pool_available == 4


@pytest.mark.parametrize("state", [True, np.bool_(True), False, np.bool_(False)],
                         ids=["true", "np-true", "false", "np-false"])
def test_allocate_takes_python_and_numpy_bools_for_state(state: object) -> None:
    cache = mamba_cache()
    held = cache.allocate(4, state=state)
    assert held is not None
    assert (held.state is not None) == bool(state)
    assert cache.stats().components["mamba"].pool_available == 4 - bool(state)
    cache.release(held)
    assert cache.stats().components["mamba"].pool_available == 4


@pytest.mark.parametrize("flag", [0, 1, None, "no"], ids=["0", "1", "none", "str"])
def test_allocate_evict_must_be_a_bool(flag: object) -> None:
    cache = mamba_cache()
    assert_refused(cache, InvalidArgumentError, lambda: cache.allocate(4, evict=flag),
                   "evict must be a bool")


# ---------------------------------------------------------------------- budgets and bounds (item 9)


@pytest.mark.parametrize("budget", [{"swa": 5}, {"mamba": 1}, {"swa": np.int8(1)}],
                         ids=["swa", "mamba", "np-swa"])
def test_evict_for_a_component_the_cache_lacks_is_refused(budget: dict[str, object]) -> None:
    cache = AuditedCache(capacity=64)
    cache.finish(cache.admit(seq(1, 8)))
    assert_refused(cache, InvalidArgumentError, lambda: cache.evict(**budget),
                   r"has no (swa|mamba) component")
    assert cache.evict(full=4, swa=0, mamba=0) == {"full": 8}


def test_a_page_size_beyond_the_limit_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="page_size"):
        CacheConfig(capacity=0, page_size=2**45)
    with pytest.raises(ConfigError, match="page_size"):
        CacheConfig(capacity=2 * MAX_PAGE_SIZE, page_size=2 * MAX_PAGE_SIZE)
    assert CacheConfig(capacity=MAX_PAGE_SIZE, page_size=MAX_PAGE_SIZE).page_size == MAX_PAGE_SIZE


def test_a_hand_made_allocation_with_a_huge_state_is_refused_as_not_issued() -> None:
    cache = mamba_cache()
    held = cache.allocate(4, state=True)
    assert held is not None
    forged = Allocation(object(), held.id, (held.full, np.array([2**70 % 2**63])),
                        cache.names, 1)
    assert_refused(cache, AllocationError, lambda: cache.insert(seq(1, 4), forged),
                   "another cache")
    cache.release(held)


def test_configs_take_numpy_integers_as_python_ints() -> None:
    """Capacities computed with numpy configure a cache; every field is a Python int after."""
    config = CacheConfig(capacity=np.int64(64), page_size=np.int32(4),
                         components=("full", SlidingWindow(window=np.int16(8))),
                         host=HostTier(capacity=np.uint32(128)))
    assert config.host is not None
    window = config.specs[1].window  # type: ignore[attr-defined]
    assert [type(v) for v in (config.capacity, config.page_size, config.host.capacity,
                              window)] == [int] * 4
    cache = AuditedCache(capacity=np.int64(64), page_size=np.int32(4))
    assert cache.allocate(8) is not None
    with pytest.raises(ConfigError, match="must be an int"):
        CacheConfig(capacity=np.bool_(True))
