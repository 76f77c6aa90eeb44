"""The threading contract (issue 11, item 10): one thread owns a PrefixCache; a metrics
thread may read ``stats()`` meanwhile (GIL builds of CPython). The scheduler thread here
runs real traffic (admit, extend, finish, abort, evict, allocate/insert) while a second
thread reads ``stats()`` as fast as it can, with the interpreter switching threads every
microsecond: no read raises, and each returns plain, bounded counters."""

from __future__ import annotations

import sys
import threading

import pytest

from radixkv import CacheConfig, CacheStats, PrefixCache

CAPACITY = 256
MAX_STEPS = 1_000_000


def traffic(cache: PrefixCache, steps: range) -> None:
    for step in steps:
        prompt = [step % 7, step % 5, *range(step % 11, step % 11 + 20)]
        lease = cache.admit(prompt, (None, f"t{step % 3}"))
        cache.extend(lease, [1, 2, 3])
        if step % 4:
            cache.finish(lease)
        else:
            cache.abort(lease)
        held = cache.allocate(8)
        if held is not None:
            cache.insert([9, step % 13, *range(6)], held)
        if step % 10 == 0:
            cache.evict(full=64)


def sane(stats: CacheStats) -> None:
    full = stats.components["full"]
    for value in (stats.available, stats.held_by_requests, full.cached, full.protected,
                  stats.nodes, stats.active_leases, stats.matches, stats.hit_tokens):
        assert type(value) is int and value >= 0
    assert stats.available <= CAPACITY and full.cached <= CAPACITY


@pytest.mark.skipif(not getattr(sys, "_is_gil_enabled", lambda: True)(),
                    reason="the stats() guarantee is for GIL builds")
def test_stats_can_be_read_from_a_metrics_thread_while_the_owner_runs_traffic() -> None:
    cache = PrefixCache(CacheConfig(capacity=CAPACITY, page_size=2, policy="lfu"))
    stop = threading.Event()
    failures: list[BaseException] = []
    reads = [0]

    def metrics() -> None:
        while not stop.is_set():
            try:
                sane(cache.stats())
            except BaseException as exc:  # reported by the main thread
                failures.append(exc)
                return
            reads[0] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    reader = threading.Thread(target=metrics)
    reader.start()
    try:
        # at least 400 steps, and on until the reader has read 100 times: how many reads
        # fit in a step depends on the machine's load, never the outcome
        done = 0
        while done < 400 or (reads[0] <= 100 and done < MAX_STEPS and not failures):
            traffic(cache, range(done, done + 100))
            done += 100
    finally:
        stop.set()
        reader.join()
        sys.setswitchinterval(interval)
    assert not failures, repr(failures[0])
    assert reads[0] > 100
    cache.check_invariants()
    sane(cache.stats())
