"""Node handles prove they are this cache's; namespace roots are created only when something
is cached; a lock protects exactly the prefix it was taken for (issue: hardening 4, 6, 11,
12). Every test here failed before its fix."""

from __future__ import annotations

import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import InvalidArgumentError, OutOfSlotsError, StaleHandleError

from ..audited import AuditedCache


def seq(start: int, count: int) -> list[int]:
    return list(range(start, start + count))


def cache_with(tokens: list[int], **config: object) -> AuditedCache:
    cache = AuditedCache(**{"capacity": 64, **config})
    cache.finish(cache.admit(tokens))
    return cache


# ---------------------------------------------------------------- handles


@pytest.mark.parametrize("config", [{}, {"components": ("full", "swa"), "sliding_window": 4}],
                         ids=["full", "full+swa"])
def test_a_namespace_root_is_never_lockable(config: dict[str, object]) -> None:
    cache = cache_with(seq(1, 8), **config)
    (root,) = cache.tree.roots.values()
    snap = cache.snapshot()
    with pytest.raises(StaleHandleError, match="root"):
        cache.lock(root.id)
    assert cache.snapshot() == snap


def test_a_handle_from_another_cache_is_stale_not_an_unrelated_node() -> None:
    first, second = cache_with(seq(1, 8)), cache_with(seq(50, 8))
    handle = first.match(seq(1, 8)).node
    assert handle is not None
    snap = second.snapshot()
    with pytest.raises(StaleHandleError, match="another cache"):
        second.lock(handle)
    assert second.snapshot() == snap
    first.unlock(first.lock(handle))


# ---------------------------------------------------------------- roots


def test_requests_that_cache_nothing_leave_no_namespace_root() -> None:
    mamba = AuditedCache(capacity=64, page_size=4, components=("full", "mamba"),
                         mamba_track_interval=4, mamba_states=8)
    for salt in range(50):  # no checkpoint: a MAMBA cache caches nothing
        mamba.finish(mamba.admit(seq(1, 8), (None, f"salt-{salt}")))
    short = AuditedCache(capacity=64, page_size=4)
    for salt in range(50):  # shorter than a page
        short.finish(short.admit(seq(1, 3), (None, f"salt-{salt}")))
        held = short.allocate(3)
        assert held is not None
        short.insert(seq(1, 3), held, (None, f"other-{salt}"))
    assert (len(mamba.tree.roots), len(short.tree.roots)) == (0, 0)
    assert (mamba.stats().nodes, short.stats().nodes) == (0, 0)


# ---------------------------------------------------------------- exact locks


def test_lock_of_a_match_protects_its_sliding_window() -> None:
    cache = AuditedCache(capacity=10, components=("full", "swa"), sliding_window=8)
    cache.finish(cache.admit([1]))
    cache.finish(cache.admit(seq(1, 9)))
    found = cache.match([1, 2])
    assert found.length == 2
    receipt = cache.lock(found)
    cache.evict(swa=1)
    assert cache.match([1, 2]).length == 2  # the window of [1, 2] is still there
    cache.unlock(receipt)
    cache.evict(swa=10)
    assert cache.match([1, 2]).length == 0


def test_a_lock_ending_inside_a_node_pins_only_its_prefix() -> None:
    cache = AuditedCache(capacity=12, page_size=4)
    cache.finish(cache.admit(seq(1, 8)))  # one node of two pages
    assert cache.stats().nodes == 1
    receipt = cache.lock(cache.match(seq(1, 4)))
    stats = cache.stats().components["full"]
    assert (stats.protected, stats.evictable, cache.stats().nodes) == (4, 4, 2)
    lease = cache.admit(seq(100, 8))  # 4 free slots + the 4 unlocked ones
    assert (lease.cached_length, cache.match(seq(1, 8)).length) == (0, 4)
    cache.abort(lease)
    cache.unlock(receipt)


def test_a_whole_node_lock_still_refuses_what_it_protects() -> None:
    cache = AuditedCache(capacity=12, page_size=4)
    cache.finish(cache.admit(seq(1, 8)))
    receipt = cache.lock(cache.match(seq(1, 8)))
    snap = cache.snapshot()
    with pytest.raises(OutOfSlotsError):
        cache.admit(seq(100, 8))
    assert cache.snapshot() == snap
    cache.unlock(receipt)


def test_lock_by_handle_and_length() -> None:
    cache = cache_with(seq(1, 8), page_size=4)
    node = cache.match(seq(1, 8)).node
    assert node is not None
    receipt = cache.lock(node, 4)
    assert cache.stats().components["full"].protected == 4
    cache.unlock(receipt)
    assert cache.stats().components["full"].protected == 0


@pytest.mark.parametrize("length", [0, 2, 12, -4, 4.0, None], ids=repr)
def test_lock_lengths_that_do_not_end_in_the_node_are_refused(length: object) -> None:
    cache = cache_with(seq(1, 8), page_size=4)
    found = cache.match(seq(1, 8))
    assert found.node is not None
    snap = cache.snapshot()
    if length is None:  # a match result carries its own length: no second one
        with pytest.raises(InvalidArgumentError):
            cache.lock(found, 4)
    else:
        with pytest.raises(InvalidArgumentError):
            cache.lock(found.node, length)  # type: ignore[arg-type]
    assert cache.snapshot() == snap


def test_an_empty_match_pins_nothing() -> None:
    cache = PrefixCache(CacheConfig(capacity=16))
    with pytest.raises(InvalidArgumentError, match="empty"):
        cache.lock(cache.match([1, 2, 3]))


def test_a_match_still_locks_its_prefix_after_a_split_above_its_end() -> None:
    cache = cache_with(seq(1, 12), page_size=4)
    found = cache.match(seq(1, 8))  # ends inside the one node [0, 12)
    cache.abort(cache.admit([*seq(1, 8), 99]))  # its lock split the node at 8
    assert cache.stats().nodes == 2
    receipt = cache.lock(found)  # the handle is now the lower half [8, 12)
    assert cache.stats().components["full"].protected == 8
    cache.unlock(receipt)
    assert cache.stats().components["full"].protected == 0
