"""KV events of the host tier, step by step: a backup announces its pages on ``CPU`` when it
is acknowledged (never before, never when it fails, never twice), host eviction removes them
from ``CPU``, demotion removes them from the device only, and a load-back announces its device
placement at once. Every call is audited: invariants, and the event stream replayed as a
router would (parents first on each medium, removals of held pages, children first) against
what the tree holds on each tier (:class:`~tests.host.support.HostEventsCache`)."""

from __future__ import annotations

import random

import pytest

from radixkv import Lease, LeaseState
from radixkv.events.snapshot import resident_pages
from radixkv.host import HostTier, NumpyCopyConfig, NumpyCopyEngine

from .support import CPU, GPU, EventStream, HeldEngine, HostEventsCache

A = [1, 2, 3, 4]
A_CHILD = [1, 2, 3, 4, 5, 6]


def host_tier_cache(policy: str = "write_through", capacity: int = 32, host: int = 64,
                    **config: object) -> tuple[HostEventsCache, HeldEngine]:
    engine = HeldEngine()
    cache = HostEventsCache(engine, HostTier(capacity=host, write_policy=policy),
                            capacity=capacity, page_size=2, **config)
    return cache, engine


def insert(cache: HostEventsCache, tokens: list[int]) -> None:
    cache.finish(cache.admit(tokens))


def test_a_backup_announces_its_pages_on_cpu_at_the_acknowledgement() -> None:
    cache, engine = host_tier_cache()
    insert(cache, A)
    (stored,) = cache.drain()
    assert stored[:2] == ("BlockStored", GPU) and stored[3] is None
    assert list(engine.pending) == [1]  # write_through: backed up at insert, in flight
    cache.poll()
    assert cache.drain() == []  # not acknowledged yet
    engine.complete(1)
    cache.poll()
    assert cache.drain() == [("BlockStored", CPU, stored[2], None)]
    assert cache.stats().host.components["full"].backed_up == 4


def test_a_failed_backup_publishes_nothing_for_the_host() -> None:
    cache, engine = host_tier_cache()
    insert(cache, A)
    cache.drain()
    engine.complete(1, ok=False)
    cache.poll()
    assert cache.drain() == []
    assert cache.stats().host.failed_backups == 1
    assert cache.stats().host.components["full"].cached == 0
    assert cache.match(A).length == 4  # the device copy is intact


def test_a_child_is_not_backed_up_below_a_parent_in_flight_and_is_announced_after_it() -> None:
    cache, engine = host_tier_cache()
    insert(cache, A)
    insert(cache, A_CHILD)
    (parent, child) = cache.drain()
    assert child[3] == parent[2][-1]
    assert list(engine.pending) == [1]  # no backup below one in flight (it could fail)
    engine.complete(1)
    cache.poll()  # the parent landed: the child, still due, is backed up now
    assert cache.drain() == [("BlockStored", CPU, parent[2], None)]
    assert list(engine.pending) == [2]
    engine.complete(2)
    cache.poll()
    assert cache.drain() == [("BlockStored", CPU, child[2], parent[2][-1])]


def test_after_a_failed_parent_backup_the_childs_backup_takes_both() -> None:
    cache, engine = host_tier_cache()
    insert(cache, A)
    insert(cache, A_CHILD)
    (parent, child) = cache.drain()
    engine.complete(1, ok=False)
    cache.poll()  # the failure lands; the child, still due, is backed up with its parent
    assert cache.drain() == []  # nothing on the host is announced, nothing stranded there
    assert list(engine.pending) == [2]
    assert len(engine.pending[2][0].source) == 6  # the parent's pages come along
    engine.complete(2)
    cache.poll()
    assert cache.drain() == [("BlockStored", CPU, parent[2], None),
                             ("BlockStored", CPU, child[2], parent[2][-1])]


def test_demotion_removes_the_device_pages_only_and_load_back_stores_them_again() -> None:
    cache, engine = host_tier_cache()
    insert(cache, A)
    ((_, _, pages, _),) = cache.drain()
    engine.complete(1)
    cache.poll()
    cache.drain()
    cache.evict(full=4)
    assert cache.drain() == [("BlockRemoved", GPU, pages, None)]
    assert cache.match(A).host_length == 4  # demoted: host-only
    lease = cache.admit([*A, 9], load_back=True)
    assert cache.drain() == [("BlockStored", GPU, pages, None)]  # placed at submission
    assert not lease.ready
    engine.complete(2)
    assert cache.poll() == [lease] and lease.ready
    assert cache.drain() == []
    cache.finish(lease)
    assert cache.drain() == []  # the tail page is partial: nothing new to announce


def test_a_failed_load_back_removes_its_device_pages_children_first() -> None:
    cache, engine = host_tier_cache()
    insert(cache, A)
    engine.complete(1)
    cache.poll()
    insert(cache, A_CHILD)  # backed up at once: its parent's copy has landed
    engine.complete(2)
    cache.poll()
    ((_, _, top, _), _, (_, _, below, _), _) = cache.drain()
    cache.evict(full=6)
    assert cache.drain() == [("BlockRemoved", GPU, below, None),
                             ("BlockRemoved", GPU, top, None)]
    lease = cache.admit([*A_CHILD, 9], load_back=True)
    assert [e[:3] for e in cache.drain()] == [("BlockStored", GPU, top),
                                               ("BlockStored", GPU, below)]
    engine.complete(3, ok=False)
    assert cache.poll() == [lease] and lease.state is LeaseState.FAILED
    assert cache.drain() == [("BlockRemoved", GPU, below, None),
                             ("BlockRemoved", GPU, top, None)]
    assert cache.match(A_CHILD).host_length == 6  # the host values stay


def test_host_eviction_removes_pages_from_cpu_and_host_only_nodes_go_whole() -> None:
    cache, engine = host_tier_cache(host=4)
    insert(cache, A)
    ((_, _, first, _),) = cache.drain()
    engine.complete(1)
    cache.poll()
    cache.evict(full=4)  # demoted: host-only
    cache.drain()
    insert(cache, [7, 8, 9, 10])  # its backup needs the host's 4 slots
    ((_, _, second, _), removed) = cache.drain()
    assert removed == ("BlockRemoved", CPU, first, None)
    assert cache.match(A).length == cache.match(A).host_length == 0  # the node is gone
    engine.complete(2)
    cache.poll()
    assert cache.drain() == [("BlockStored", CPU, second, None)]


def test_a_backup_of_another_component_does_not_announce_the_node_again() -> None:
    cache, _ = host_tier_cache(policy="write_back", components=("full", "swa"), sliding_window=2)
    insert(cache, A)
    cache.drain()
    cache.evict(full=4)  # write_back: pauses, backs FULL and SWA up, then demotes
    names = [e[:2] for e in cache.drain()]
    assert names == [("BlockStored", CPU), ("BlockRemoved", GPU)]
    lease = cache.admit([*A, 9], load_back=True)
    cache.wait(lease)
    cache.finish(lease)
    cache.drain()
    tree = cache.tree
    node = tree.node(cache.match(A).node)
    cache.host.evict_host([0, 2])  # the host loses SWA only
    assert tree.has(node, 0, 1) and not tree.has(node, 1, 1)
    cache.evict(swa=2)  # pauses on SWA, backs up SWA alone, then tombstones it
    assert cache.stats().host.backup_batches == 2
    assert cache.drain() == []  # FULL was announced on CPU already


def _finish_one(cache: HostEventsCache, leases: list[Lease], rng: random.Random) -> None:
    lease = leases.pop(rng.randrange(len(leases)))
    if lease.state is LeaseState.ACTIVE:
        cache.wait(lease)
    if lease.state is LeaseState.ACTIVE:
        (cache.finish if rng.random() < 0.9 else cache.abort)(lease)


@pytest.mark.parametrize("seed", range(6))
def test_random_traffic_keeps_the_stream_equal_to_both_tiers(seed: int) -> None:
    rng = random.Random(seed)
    policy = ("write_through", "write_through_selective", "write_back")[seed % 3]
    engine = NumpyCopyEngine(NumpyCopyConfig(delay_polls=3, seed=seed, failure_rate=0.2))
    cache = HostEventsCache(engine, HostTier(capacity=24, write_policy=policy),
                            capacity=16, page_size=2)
    leases: list[Lease] = []
    for _ in range(400):
        tokens = [rng.randrange(3) for _ in range(rng.randrange(1, 10))]
        action = rng.random()
        if leases and (len(leases) >= 2 or action < 0.3):
            _finish_one(cache, leases, rng)
        elif action < 0.6:
            try:
                leases.append(cache.admit(tokens, load_back=rng.random() < 0.8))
            except MemoryError:
                cache.evict(full=4)
        elif action < 0.8:
            cache.poll()
        elif action < 0.9:
            cache.evict(full=rng.randrange(1, 6))
        else:
            cache.match(tokens)
    host = cache.stats().host
    assert host is not None and host.backup_batches > 5 and host.load_batches > 5
    assert host.failed_loads + host.failed_backups > 2 and cache.stream.pages(CPU)
    snapshot = EventStream(2)  # a resync from the snapshot rebuilds the same state
    snapshot.apply(list(resident_pages(cache.cache)))
    assert snapshot.held == cache.stream.held


def test_the_resync_snapshot_names_each_tier_that_announced_a_page() -> None:
    cache, engine = host_tier_cache()
    insert(cache, A)  # device + host (acknowledged below)
    insert(cache, [7, 8])  # device + host
    engine.complete(1)
    engine.complete(2)
    cache.poll()
    insert(cache, A_CHILD)  # device, its backup in flight: not on CPU yet
    cache.evict(full=2)  # [7, 8] is the least recent: demoted, host-only
    events = cache.drain()
    ids = {tuple(e[2]): e for e in events if e[0] == "BlockStored" and e[1] == GPU}
    a, seven, child = (list(k) for k in ids)
    assert [(e.medium, e.block_hashes, e.parent_block_hash)
            for e in resident_pages(cache.cache)] == [
        (GPU, a, None), (CPU, a, None), (GPU, child, a[-1]), (CPU, seven, None)]
