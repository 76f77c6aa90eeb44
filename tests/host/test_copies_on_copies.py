"""Copies in flight and what runs into them (found by the reference model's host-tier runs
with failing, delayed, out-of-order copies): a copy is never planned on top of another
still in flight, nor an insert run into one, and host eviction never takes a value a
backup's plan rests on; if a first copy failed, taking its values back would otherwise
leave nodes on a tier their parent is not on, or a lease reading rows not yet written."""

from __future__ import annotations

from collections.abc import Sequence

from radixkv import CacheConfig, FullAttention, PrefixCache
from radixkv.cache import LeaseState
from radixkv.host import Copy, Direction, HostTier, NumpyCopyConfig, NumpyCopyEngine

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


def test_a_backup_below_one_in_flight_waits_and_after_a_failure_takes_both(
) -> None:
    cache, copies = _cache()
    assert cache.host is not None
    lease = cache.admit(PROMPT)
    cache.commit(lease)
    (first,) = cache.host.records  # the prompt's node is being backed up
    cache.extend(lease, MORE)
    cache.commit(lease)  # the new child is not backed up on top of its parent's copy
    cache.check_invariants()
    assert list(cache.host.records) == [first]
    assert list(cache.host.due) == [cache.match(PROMPT + MORE).node]  # it stays due
    copies.fail(first)
    while first in cache.host.records:
        cache.poll()  # once the failure lands, the due child's backup takes its parent
        cache.check_invariants()
    (second,) = cache.host.records
    assert second != first and cache.host.records[second].units == [len(PROMPT + MORE)]
    _poll_until_idle(cache)
    stats = cache.stats().host
    assert stats is not None and stats.failed_backups == 1 and stats.backup_batches == 2
    assert stats is not None and stats.components["full"].backed_up == len(PROMPT + MORE)
    cache.finish(lease)
    cache.check_invariants()


def test_a_write_back_eviction_below_a_backup_in_flight_drops_the_child() -> None:
    """Under write_back, eviction pauses on a node the host lacks to back it up; with its
    parent's backup still in flight (here failing) the child is not backed up on top of
    it: it is evicted without a backup, and nothing is left on the host below a node
    that is not."""
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
    assert cache.evict(len(MORE)) == {"full": len(MORE)}  # the leaf (the child) goes first
    cache.check_invariants()
    _poll_until_idle(cache)
    stats = cache.stats().host
    assert stats is not None and stats.failed_backups == 1 and stats.backup_batches == 1
    assert cache.match(PROMPT + MORE).host_length == 0
    assert cache.match(PROMPT).length == len(PROMPT)


def _demoted_chain(capacity: int = 32) -> tuple[PrefixCache, NumpyCopyEngine]:
    """PROMPT and PROMPT + MORE cached as two nodes, backed up, then demoted."""
    cache, copies = _cache(delay=3, capacity=capacity)
    for prompt in (PROMPT, PROMPT + MORE):
        cache.finish(cache.admit(prompt))
        _poll_until_idle(cache)
    assert cache.evict(16) == {"full": 16}
    cache.check_invariants()
    return cache, copies


def test_a_load_back_over_a_prefix_still_loading_is_not_started() -> None:
    """The second lease is admitted with what is on device (the first one's copy in
    flight) and waits for that copy; it loads nothing on top of it. The first copy fails:
    both leases fail, nothing is left on device below a host-only node, and admitted
    again the second loads the whole prefix."""
    cache, copies = _demoted_chain()
    assert cache.host is not None
    first = cache.admit([*PROMPT, 99], load_back=True)
    assert first.cached_length == len(PROMPT) and not first.ready
    (ticket,) = cache.host.records
    second = cache.admit([*PROMPT, *MORE, 99], load_back=True)
    cache.check_invariants()
    assert list(cache.host.records) == [ticket]
    assert second.cached_length == len(PROMPT) and second.waiting == {ticket}
    copies.fail(ticket)
    _poll_until_idle(cache)
    assert first.state is second.state is LeaseState.FAILED
    again = cache.admit([*PROMPT, *MORE, 99], load_back=True)
    assert again.cached_length == len(PROMPT + MORE)
    _poll_until_idle(cache)
    assert again.ready
    cache.finish(again)
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


def test_an_insert_stops_at_a_node_being_loaded_back() -> None:
    """A lease computed PROMPT + MORE itself (its prompt was host-only, it did not load);
    meanwhile another lease loads those nodes back. Its commit must not take over their
    device values before they land (it would read rows not written yet), nor insert
    below them (should the copy fail): it caches nothing there until the copy landed."""
    cache, copies = _demoted_chain(capacity=64)
    assert cache.host is not None
    computing = cache.admit(PROMPT + MORE)
    assert computing.cached_length == 0 and computing.ready
    own = computing.slots.copy()
    loading = cache.admit([*PROMPT, *MORE, 99], load_back=True)
    (ticket,) = cache.host.records
    copies.fail(ticket)
    assert cache.commit(computing) == 0
    cache.check_invariants()
    assert (computing.slots == own).all()  # still its own slots
    _poll_until_idle(cache)
    assert loading.state is LeaseState.FAILED
    assert cache.commit(computing) == len(PROMPT + MORE)  # now it stores its own
    assert (cache.match(PROMPT + MORE).slots == own).all()
    cache.finish(computing)
    cache.check_invariants()


def _mamba_demoted(prompts: Sequence[list[int]]) -> tuple[PrefixCache, NumpyCopyEngine]:
    """A FULL + MAMBA cache whose ``prompts`` were cached (a state at each end) by direct
    inserts, backed up (write_through, copies land at the next poll), then demoted."""
    copies = NumpyCopyEngine()
    config = CacheConfig(capacity=64, page_size=1, components=("full", "mamba"),
                         mamba_track_interval=2, mamba_states=8,
                         host=HostTier(capacity=32, states=8, write_policy="write_through"))
    cache = PrefixCache(config, copies)
    for prompt in prompts:
        allocation = cache.allocate(len(prompt), state=True)
        assert allocation is not None
        cache.insert(prompt, allocation)
        _poll_until_idle(cache)
    assert cache.evict(64)["full"] == len(prompts[-1])
    cache.check_invariants()
    return cache, copies


def _insert_with_a_state(cache: PrefixCache, tokens: list[int]) -> int:
    """A direct insert of ``tokens`` with a state slot; what the tree holds for them. The
    state slot is the checkpoint at the end: where the tree did not reach it, it must go
    back to the pool (``check_invariants`` finds it leaked otherwise)."""
    available = cache.stats().components["mamba"].pool_available
    allocation = cache.allocate(len(tokens), state=True)
    assert allocation is not None
    cached = cache.insert(tokens, allocation)
    cache.check_invariants()
    assert cache.stats().components["mamba"].pool_available == available
    return cached


def test_a_direct_insert_cut_at_a_node_being_loaded_back_gives_its_state_back() -> None:
    """The adversarial copy engine's machine found it (its chaos under a loaded machine):
    a direct insert whose first node is still being loaded back caches nothing, and its
    state slot, the checkpoint at its end that the tree never reached, leaked."""
    cache, _ = _mamba_demoted([PROMPT])
    loading = cache.admit([*PROMPT, 99], load_back=True)
    assert not loading.ready
    cache.abort(loading)  # the copy stays in flight: the node stays loading
    assert _insert_with_a_state(cache, PROMPT) == 0
    _poll_until_idle(cache)
    assert _insert_with_a_state(cache, PROMPT) == len(PROMPT)  # landed: a duplicate now


def test_a_direct_insert_cut_below_the_device_part_gives_its_state_back() -> None:
    """The same with the loading node deeper: the insert is cut at its start (PROMPT,
    on device), short of the checkpoint at its own end."""
    cache, _ = _mamba_demoted([PROMPT, PROMPT + MORE])
    found = cache.match(PROMPT + MORE)
    assert found.length == 0 and found.host_length == len(PROMPT + MORE)
    reloaded = cache.admit(PROMPT, load_back=True)  # PROMPT's node back on device
    _poll_until_idle(cache)
    cache.finish(reloaded)
    assert cache.match(PROMPT + MORE).length == len(PROMPT)
    loading = cache.admit([*PROMPT, *MORE, 99], load_back=True)  # MORE's node loading
    assert not loading.ready
    assert _insert_with_a_state(cache, [*PROMPT, *MORE, 5, 6]) == len(PROMPT)
    _poll_until_idle(cache)
    assert loading.ready
    cache.finish(loading)
    cache.check_invariants()
