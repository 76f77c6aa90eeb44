"""Load-back step by step (FULL, page 1): admit(load_back=True) revives a host-only prefix on
device, the lease is not ready until the copy is acknowledged, and the device slots then
hold the host rows' bytes. Abort, reset and a failing copy engine during a load-back."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv.cache import LeaseState
from radixkv.errors import LeaseError, OutOfSlotsError
from radixkv.host import HostTier

from ..audited import assert_refused
from ..components.support import seq
from .helpers import TierCache, delayed, host_counters, host_ledger, kv_buffers, node_at, nodes


def kv(tokens: list[int]) -> np.ndarray:
    """The KV rows an engine computes for ``tokens`` (one row per token)."""
    array = np.asarray(tokens, dtype=np.int64)
    return np.stack([array + 100, array + 200], axis=1)


class Loaded:
    """A cache whose prompt [0, 8) was computed (real bytes in the device buffer), backed
    up and demoted: it lives on the host only; the device rows it used are overwritten."""

    def __init__(self, polls: int = 1, capacity: int = 16) -> None:
        self.cache = TierCache(delayed(polls), capacity=capacity, host=HostTier(capacity=32))
        self.device, self.host = kv_buffers(self.cache.engine, "full", capacity, 32)
        lease = self.cache.admit(seq(0, 8))
        self.device[lease.slots] = kv(seq(0, 8))
        self.cache.finish(lease)
        self.cache.wait()
        assert self.cache.evict(full=capacity) == {"full": 8}
        self.device[:] = -1
        assert nodes(self.cache) == [(0, 8, None, seq(0, 8))]


def test_load_back_revives_the_prefix_and_the_lease_is_ready_at_the_ack() -> None:
    setup = Loaded()
    cache = setup.cache
    found = cache.match(seq(0, 8))
    assert (found.length, found.host_length) == (0, 8)
    lease = cache.admit([*seq(0, 8), 50], load_back=True)
    assert (lease.cached_length, lease.tree_owned) == (8, 8)
    assert not lease.ready and lease.waiting == {2}
    # the load-back took the first 8 free slots (8..15), the lease's own page came after
    assert lease.slots.tolist() == [*seq(8, 8), 0]
    assert nodes(cache) == [(0, 8, seq(8, 8), seq(0, 8))]
    assert (setup.device[8:16] == -1).all(), "bytes moved before the acknowledgement"
    assert host_counters(cache) == {"backup_batches": 1, "load_batches": 1,
                                    "copies_in_flight": 1, "failed_backups": 0,
                                    "failed_loads": 0, "skipped_backups": 0,
                                    "host_hit_tokens": 8, "load_requests": 1}
    assert cache.poll() == []
    assert cache.poll() == [lease]
    assert lease.ready and lease.waiting == set()
    assert setup.device[lease.slots[:8]].tolist() == kv(seq(0, 8)).tolist()
    # the host copy stays, protected by the lease's lock (a lock holds every tier)
    assert host_ledger(cache) == {"cached": 8, "evictable": 0, "protected": 8,
                                  "available": 24, "backed_up": 8, "loaded": 8}
    assert cache.finish(lease) == 9  # its new leaf [8, 9) is backed up: locked again
    assert host_ledger(cache)["protected"] == 9
    cache.wait()
    assert host_ledger(cache)["protected"] == 0
    found = cache.match(seq(0, 8))
    assert (found.length, found.host_length) == (8, 0)


def test_a_lease_not_ready_refuses_extend_commit_and_finish() -> None:
    cache = Loaded(polls=3).cache
    lease = cache.admit([*seq(0, 8), 50], load_back=True)
    for call in (lambda: cache.extend(lease, [7]), lambda: cache.commit(lease),
                 lambda: cache.finish(lease)):
        assert_refused(cache, LeaseError, call, match="waits for its load-back")
    assert cache.wait(lease) == [lease]
    cache.extend(lease, [7])
    assert cache.finish(lease) == 10


def test_a_lease_on_a_prefix_being_loaded_back_waits_for_that_copy() -> None:
    setup = Loaded(polls=2)
    cache = setup.cache
    loader = cache.admit(seq(0, 8), load_back=True)
    rider = cache.admit([*seq(0, 8), 60, 61])  # no load-back of its own
    assert rider.cached_length == 8 and rider.waiting == loader.waiting == {2}
    assert host_counters(cache)["load_batches"] == 1
    assert cache.wait(rider) == [loader, rider]
    assert setup.device[rider.slots[:8]].tolist() == kv(seq(0, 8)).tolist()


def test_abort_during_a_load_back_keeps_the_copy_and_what_it_loads() -> None:
    setup = Loaded(polls=2)
    cache = setup.cache
    lease = cache.admit([*seq(0, 8), 50], load_back=True)
    node = cache.tree.node(cache.match(seq(0, 8)).node)
    cache.abort(lease)
    assert lease.state is LeaseState.ABORTED
    assert list(node.locks) == [1] and len(cache.host.records) == 1  # the copy's lock
    assert cache.stats().components["full"].pool_available == 8  # its own page is free
    assert cache.poll() == [] and cache.poll() == []
    cache.poll()
    assert list(node.locks) == [0] and not cache.host.records
    assert nodes(cache) == [(0, 8, seq(8, 8), seq(0, 8))]
    assert setup.device[8:16].tolist() == kv(seq(0, 8)).tolist()
    assert cache.match(seq(0, 8)).length == 8


def test_a_failed_load_back_fails_every_lease_waiting_and_keeps_the_host_copy() -> None:
    setup = Loaded(polls=2)
    cache = setup.cache
    loader = cache.admit([*seq(0, 8), 50], load_back=True)
    rider = cache.admit([*seq(0, 8), 60])
    cache.engine.fail(2)
    assert cache.wait(loader) == [loader, rider]
    assert loader.state is rider.state is LeaseState.FAILED
    assert cache.leases() == [] and cache.stats().failed == 2
    assert nodes(cache) == [(0, 8, None, seq(0, 8))]
    assert cache.stats().components["full"].pool_available == 16
    assert host_counters(cache)["failed_loads"] == 1
    assert host_ledger(cache)["loaded"] == 0
    found = cache.match(seq(0, 8))
    assert (found.length, found.host_length) == (0, 8)
    with pytest.raises(LeaseError, match="failed, not active"):
        cache.finish(loader)
    again = cache.admit([*seq(0, 8), 50], load_back=True)  # admit again: it works
    cache.wait(again)
    assert again.ready and again.cached_length == 8
    assert setup.device[again.slots[:8]].tolist() == kv(seq(0, 8)).tolist()
    assert cache.finish(again) == 9


def test_reset_waits_for_the_copies_in_flight_and_frees_both_tiers() -> None:
    setup = Loaded(polls=4)
    cache = setup.cache
    lease = cache.admit([*seq(0, 8), 50], load_back=True)
    cache.finish(cache.admit(seq(30, 4)))  # its backup is in flight too
    assert len(cache.host.records) == 2 and cache.engine.in_flight == 2
    cache.reset()
    assert cache.engine.in_flight == 0 and not cache.host.records
    assert lease.state is LeaseState.INVALIDATED
    assert nodes(cache) == []
    assert host_ledger(cache)["available"] == 32
    assert cache.stats().components["full"].pool_available == 16
    assert setup.device[8:16].tolist() == kv(seq(0, 8)).tolist()  # the copy did land
    cache.finish(cache.admit(seq(0, 4)))
    assert cache.match(seq(0, 4)).length == 4


def test_admit_refused_while_load_backs_pin_the_pool_changes_nothing() -> None:
    cache = Loaded(polls=3).cache
    lease = cache.admit([*seq(0, 8), 50], load_back=True)  # 9 device slots held
    assert cache.stats().components["full"].pool_available == 7
    assert_refused(cache, OutOfSlotsError, lambda: cache.admit(seq(40, 8)))
    assert_refused(cache, OutOfSlotsError, lambda: cache.allocate(8))
    cache.wait(lease)
    assert lease.ready
    cache.abort(lease)
    assert cache.admit(seq(40, 8)).slots.tolist() == [*seq(1, 7), 0]


def test_a_hybrid_load_back_copies_only_what_each_component_needs() -> None:
    """FULL+SWA(2)+MAMBA: FULL needs every page of the prefix, SWA only the node holding
    its window (the last 2 tokens), MAMBA only the state at the prefix end."""
    cache = TierCache(delayed(1), capacity=16, components=("full", "swa", "mamba"),
                      sliding_window=2, mamba_track_interval=4, mamba_states=4,
                      host=HostTier(capacity=16, states=4))
    full, _ = kv_buffers(cache.engine, "full", 16, 16)
    swa, _ = kv_buffers(cache.engine, "swa", 16, 16)
    states, _ = kv_buffers(cache.engine, "mamba", 4, 4)
    lease = cache.admit(seq(0, 8))
    full[lease.slots] = kv(seq(0, 8))
    swa[lease.swa_slots] = kv(seq(0, 8))
    assert [cache.checkpoint(lease, 4), cache.checkpoint(lease, 8)] == [1, 2]
    states[[1, 2]] = [[4, 4], [8, 8]]
    cache.finish(lease)
    cache.wait()
    assert cache.evict(full=16) == {"full": 8, "swa": 8, "mamba": 2}  # demoted, all of it
    for array in (full, swa, states):
        array[:] = -1
    assert cache.match(seq(0, 8)).host_length == 8
    lease = cache.admit([*seq(0, 8), 9], load_back=True)
    (record,) = cache.host.records.values()
    assert record.units == [8, 4, 1]
    assert lease.slots.tolist() == [*seq(8, 8), 4]  # loaded, then its own page
    assert (lease.start_of("swa"), lease.swa_slots.tolist()) == (4, [*seq(8, 4), 12])
    assert lease.copy_state_from == 3
    top, end = (cache.tree.node(node_at(cache, seq(0, n))) for n in (4, 8))
    assert [cache.tree.value(top, i) is not None for i in range(3)] == [True, False, False]
    assert [cache.tree.value(end, i) is not None for i in range(3)] == [True, True, True]
    cache.wait(lease)
    assert lease.ready
    assert full[lease.slots[:8]].tolist() == kv(seq(0, 8)).tolist()
    assert swa[lease.swa_slots[:4]].tolist() == kv(seq(4, 4)).tolist()
    assert states[3].tolist() == [8, 8]
    assert [host_ledger(cache, name)["loaded"] for name in ("full", "swa", "mamba")] == [8, 4, 1]


def test_a_lease_not_ready_refuses_a_checkpoint() -> None:
    """The engine cannot compute a state past a prefix whose KV is still loading."""
    cache = TierCache(delayed(3), capacity=16, components=("full", "mamba"), mamba_states=8,
                      mamba_track_interval=4, page_size=4,
                      host=HostTier(capacity=32, states=8))
    lease = cache.admit(seq(0, 8))
    cache.checkpoint(lease, 8)
    cache.finish(lease)
    cache.wait()
    assert cache.evict(full=16) == {"full": 8, "mamba": 1}
    lease = cache.admit([*seq(0, 8), *seq(50, 8)], load_back=True)
    assert lease.cached_length == 8 and not lease.ready
    assert_refused(cache, LeaseError, lambda: cache.checkpoint(lease, 12),
                   match="waits for its load-back")
    cache.wait(lease)
    assert cache.checkpoint(lease, 12) >= 0
    cache.finish(lease)
