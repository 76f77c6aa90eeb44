"""A copy is never planned on top of another copy still in flight: if the first failed,
taking its values back would leave the second's nodes on a tier their parent is not on
(found by the reference model's host-tier runs with failing, delayed copies)."""

from __future__ import annotations

from collections.abc import Sequence

from radixkv import CacheConfig, FullAttention, PrefixCache
from radixkv.cache import LeaseState
from radixkv.tiers import Copy, Direction, HostTier, NumpyCopyConfig, NumpyCopyEngine

PROMPT = list(range(1, 9))
MORE = list(range(20, 28))


def _cache(policy: str = "write_through", delay: int = 3, capacity: int = 32
           ) -> tuple[PrefixCache, NumpyCopyEngine]:
    copies = NumpyCopyEngine(NumpyCopyConfig(delay_polls=delay))
    config = CacheConfig(capacity=capacity, page_size=1, components=(FullAttention(),),
                         host=HostTier(capacity=64, write_policy=policy))
    return PrefixCache(config, copies), copies


def _poll_until_idle(cache: PrefixCache) -> None:
    assert cache.host is not None
    for _ in range(10):
        cache.poll()
        cache.check_invariants()
        if not cache.host.records and not cache.host.due:
            return
    raise AssertionError("copies still in flight after 10 polls")


def test_a_backup_below_one_in_flight_waits_for_it_and_a_failure_leaves_both_device_only(
) -> None:
    cache, copies = _cache()
    assert cache.host is not None
    lease = cache.admit(PROMPT)
    cache.commit(lease)
    (first,) = cache.host.records  # the prompt's node is being backed up
    cache.extend(lease, MORE)
    cache.commit(lease)  # the new child node is due, but its parent's copy is in flight
    cache.check_invariants()
    assert list(cache.host.records) == [first]
    assert len(cache.host.due) == 1
    copies.fail(first)
    _poll_until_idle(cache)
    stats = cache.stats().host
    assert stats is not None and stats.failed_backups == 1
    # the next flush backed both up in one batch, after the failure
    assert stats.components["full"].backed_up == len(PROMPT) + len(MORE)
    cache.finish(lease)
    cache.check_invariants()
    assert cache.match(PROMPT + MORE).length == 16


def test_a_write_back_eviction_of_a_child_waits_for_its_parents_backup_in_flight() -> None:
    """Under write_back, eviction pauses on a node the host lacks and backs it up first; if
    its parent's backup is still in flight (and fails), the child's backup waits for it
    and then takes the parent along."""
    cache, copies = _cache("write_back", delay=2)
    assert cache.host is not None
    for prompt in (PROMPT, PROMPT + MORE):
        cache.finish(cache.admit(prompt))
    handle = cache.match(PROMPT).node
    assert handle is not None
    parent = cache.tree.nodes[int(handle)]
    record = cache.host.backup([parent])  # a backup started earlier, still in flight
    assert record is not None
    copies.fail(record.ticket)
    evicted = cache.evict(len(MORE))  # the leaf (the child) goes first: demoted
    cache.check_invariants()
    assert evicted == {"full": len(MORE)}
    stats = cache.stats().host
    assert stats is not None and stats.failed_backups == 1
    assert stats.components["full"].backed_up == len(PROMPT) + len(MORE)
    assert cache.match(PROMPT + MORE).host_length == len(MORE)


def _demoted_chain(capacity: int = 32) -> tuple[PrefixCache, NumpyCopyEngine]:
    """PROMPT and PROMPT + MORE cached as two nodes, backed up, then demoted."""
    cache, copies = _cache(delay=3, capacity=capacity)
    for prompt in (PROMPT, PROMPT + MORE):
        cache.finish(cache.admit(prompt))
        _poll_until_idle(cache)
    assert cache.evict(16) == {"full": 16}
    cache.check_invariants()
    return cache, copies


def test_a_load_back_on_top_of_one_in_flight_waits_for_it_first() -> None:
    cache, copies = _demoted_chain()
    assert cache.host is not None
    first = cache.admit([*PROMPT, 99], load_back=True)
    assert first.cached_length == len(PROMPT) and not first.ready
    (ticket,) = cache.host.records
    copies.fail(ticket)
    second = cache.admit(PROMPT + MORE + [99], load_back=True)
    cache.check_invariants()
    # admit waited for the first load-back (failed: the first lease with it), then loaded
    # the whole prefix itself
    assert first.state is LeaseState.FAILED
    assert second.cached_length == len(PROMPT + MORE)
    assert len(second.waiting) == 1 and ticket not in second.waiting
    _poll_until_idle(cache)
    assert second.ready
    stats = cache.stats().host
    assert stats is not None and stats.failed_loads == 1
    assert stats.components["full"].loaded == len(PROMPT + MORE)
    cache.finish(second)
    cache.check_invariants()


def test_a_load_back_on_top_of_one_in_flight_that_lands_loads_only_the_rest() -> None:
    cache, _ = _demoted_chain()
    assert cache.host is not None
    first = cache.admit([*PROMPT, 99], load_back=True)
    second = cache.admit(PROMPT + MORE + [99], load_back=True)
    cache.check_invariants()
    assert first.ready and not second.ready  # admit waited for the first copy
    _poll_until_idle(cache)
    stats = cache.stats().host
    assert stats is not None and stats.components["full"].loaded == len(PROMPT + MORE)
    assert stats.host_hit_tokens == len(PROMPT) + len(MORE)
    for lease in (first, second):
        cache.finish(lease)
    cache.check_invariants()


class _FailingLoads(NumpyCopyEngine):
    """Every load-back batch fails (when it completes)."""

    def submit(self, copies: Sequence[Copy]) -> int:
        ticket = super().submit(copies)
        if any(copy.direction is Direction.TO_DEVICE for copy in copies):
            self.fail(ticket)
        return ticket


def test_a_wait_inside_admit_leaves_a_failed_load_back_for_the_next_poll() -> None:
    """Admit submits a load-back, then its own allocation evicts under write_back, which
    waits for a backup; the engine reports the (failed) load-back meanwhile. Applying it
    there would take back the values admit is about to lend; it waits for the poll."""
    copies = _FailingLoads(NumpyCopyConfig(delay_polls=1))
    config = CacheConfig(capacity=32, page_size=1, components=(FullAttention(),),
                         host=HostTier(capacity=64, write_policy="write_back"))
    cache = PrefixCache(config, copies)
    assert cache.host is not None
    cache.finish(cache.admit(PROMPT))
    assert cache.evict(len(PROMPT)) == {"full": len(PROMPT)}  # backed up, then demoted
    cache.finish(cache.admit(list(range(40, 60))))  # 20 device-only tokens
    lease = cache.admit(PROMPT + MORE, load_back=True)  # loads 8, evicts for 8 fresh
    cache.check_invariants()
    assert lease.cached_length == len(PROMPT) and not lease.ready
    assert cache.poll() == [lease] and lease.state is LeaseState.FAILED
    cache.check_invariants()
    stats = cache.stats().host
    assert stats is not None and stats.failed_loads == 1
    assert cache.match(PROMPT).host_length == len(PROMPT)  # the host copy is intact


def test_host_eviction_for_a_backup_spares_the_host_values_its_plan_rests_on() -> None:
    config = CacheConfig(capacity=32, page_size=1, components=(FullAttention(),),
                         host=HostTier(capacity=16, write_policy="write_back"))
    cache = PrefixCache(config, NumpyCopyEngine())
    assert cache.host is not None
    other = list(range(40, 48))
    for prompt in (PROMPT, PROMPT + MORE, other):
        cache.finish(cache.admit(prompt))
    nodes = cache.tree.nodes
    parent, child, unrelated = (nodes[int(cache.match(p).node)]  # type: ignore[arg-type]
                                for p in (PROMPT, PROMPT + MORE, other))
    for node in (parent, unrelated):  # the host pool is full: the parent is its LRU entry
        cache.host.backup([node])
        cache.poll()
    assert cache.host.backup([child]) is not None  # needs 8 host slots: evicts one
    cache.check_invariants()
    cache.poll()
    cache.check_invariants()
    assert cache.tree.value(parent, 0, 1) is not None  # the parent kept its host copy
    assert cache.tree.value(unrelated, 0, 1) is None


def test_an_insert_through_nodes_being_loaded_back_waits_for_the_copy() -> None:
    """A lease computed PROMPT + MORE itself (its prompt was host-only, it did not load);
    meanwhile another lease loads those nodes back. Its commit runs through them: the
    insert keeps their device values over its duplicates, so it must wait for the copy,
    or the lease would read rows that have not landed."""
    cache, _ = _demoted_chain(capacity=64)
    assert cache.host is not None
    computing = cache.admit(PROMPT + MORE)
    assert computing.cached_length == 0 and computing.ready
    loading = cache.admit([*PROMPT, *MORE, 99], load_back=True)
    (ticket,) = cache.host.records
    cache.commit(computing)
    cache.check_invariants()
    assert ticket not in cache.host.records  # the commit waited for the load-back
    assert loading.ready
    handle = cache.match(PROMPT + MORE).node
    assert handle is not None
    assert (computing.slots == cache.match(PROMPT + MORE).slots).all()
    for lease in (computing, loading):
        cache.finish(lease)
    cache.check_invariants()


def test_an_insert_through_nodes_whose_load_back_fails_fills_them_itself() -> None:
    cache, copies = _demoted_chain(capacity=64)
    assert cache.host is not None
    computing = cache.admit(PROMPT + MORE)
    loading = cache.admit([*PROMPT, *MORE, 99], load_back=True)
    (ticket,) = cache.host.records
    copies.fail(ticket)
    own = computing.slots.copy()
    cache.commit(computing)
    cache.check_invariants()
    assert loading.state is LeaseState.FAILED
    # the failed copy's values were taken back; the insert stored the lease's own
    assert (cache.match(PROMPT + MORE).slots == own).all()
    cache.finish(computing)
    cache.check_invariants()
    assert cache.poll() == [loading]
