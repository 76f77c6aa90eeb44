"""A wait inside an admission's eviction (write-back backs a node up and waits for it) may
see other batches complete. A load-back it sees fail must not be applied there: its
take-back would remove device values the admission just matched (the admit then read a
missing value and leaked its slots, found by the random traffic of test_tier_events). It is
applied at the next poll."""

from __future__ import annotations

from radixkv import LeaseState
from radixkv.host import HostTier

from .support import HeldEngine, HostEventsCache

A = [1, 2, 3, 4]
B = [5, 6, 7, 8]


def test_a_load_back_failing_during_an_admissions_wait_is_applied_at_the_next_poll() -> None:
    engine = HeldEngine()
    cache = HostEventsCache(engine, HostTier(capacity=16, write_policy="write_back"),
                            capacity=12, page_size=2)
    cache.finish(cache.admit(A))
    cache.evict(full=4)  # pauses, backs A up (the held engine's wait completes it), demotes
    assert cache.match(A).host_length == 4
    cache.finish(cache.admit(B))
    loading = cache.admit([*A, 9], load_back=True)
    (load,) = loading.waiting
    engine.complete(load, ok=False)  # reported by the engine's next poll or wait
    second = cache.admit([*A, 8, 8, 8])  # evicting B waits for B's backup, sees the failure
    assert second.cached_length == 4 and second.waiting == {load}
    assert loading.state is second.state is LeaseState.ACTIVE
    assert cache.match(B).host_length == 4  # B was demoted on the way
    assert sorted(lease.id for lease in cache.poll()) == [loading.id, second.id]
    assert loading.state is second.state is LeaseState.FAILED
    assert cache.match(A).length == 0 and cache.match(A).host_length == 4
    assert cache.stats().host.failed_loads == 1
