"""The wait policies against a slow store: a redis-server of each test's own, paused
(SIGSTOP) while an L3 query or its reads are in flight. best_effort admits at once,
wait_complete waits for the answer, timeout returns after about timeout_s with what
arrived (pages an earlier prefetch brought) and leaves the rest in flight or draining; a
reset or close meanwhile leaves the pools whole."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from .fault_support import (
    PROMPTS,
    admitted,
    closed,
    faults,
    finished,
    nothing_held,
    queried,
    reset_whole,
    served,
    tier,
)
from .redis_tier import RETRY, on, written_to
from .servers import RedisServer, missing

LOADED_BOUND_S = 10.0
"""The upper bound on a wait that should not wait for the paused store: far below the 60 s
a wait for it would take (StorageTier.wait_timeout_s), far above what a loaded machine adds
(the lower bounds, a policy's own timeout, hold on any machine)."""

pytestmark = pytest.mark.skipif(missing("redis-server") is not None,
                                reason=str(missing("redis-server")))


def test_best_effort_admits_at_once_while_the_store_is_paused(own_redis: RedisServer) -> None:
    own_redis.start()
    written_to(own_redis, PROMPTS[0])
    second = on(own_redis, wait_policy="best_effort")
    own_redis.process.signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        lease = admitted(second, PROMPTS[0])
        assert time.monotonic() - started < LOADED_BOUND_S and lease.cached_length == 0
        assert tier(second).prefetches_in_flight == 1
        finished(second, lease, PROMPTS[0])
    finally:
        own_redis.process.signal(signal.SIGCONT)
    second.cache.wait()  # the late answer finds the prompt cached: nothing to attach
    nothing_held(second)
    stats = tier(second)
    assert (stats.lookups, stats.restores, stats.not_attached) == (1, 0, 1)
    assert faults(second) == {}
    closed(second)


def test_wait_complete_waits_for_a_paused_store_to_answer(own_redis: RedisServer) -> None:
    own_redis.start()
    written_to(own_redis, PROMPTS[0])
    second = on(own_redis)
    own_redis.process.signal(signal.SIGSTOP)
    resume = threading.Timer(0.5, own_redis.process.signal, (signal.SIGCONT,))
    resume.start()
    started = time.monotonic()
    try:
        assert served(second, PROMPTS[0]) == 64
        assert time.monotonic() - started >= 0.5
    finally:
        resume.join()
    assert faults(second) == {} and tier(second).restored_tokens == 64
    closed(second)


def test_timeout_admits_after_timeout_s_and_keeps_the_late_reads_in_flight(
        own_redis: RedisServer) -> None:
    own_redis.start()
    written_to(own_redis, PROMPTS[0])
    second = on(own_redis, wait_policy="timeout", timeout_s=0.4)
    queried(second, PROMPTS[0])  # the query answered; its reads will find the store paused
    own_redis.process.signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        lease = admitted(second, PROMPTS[0])
        assert 0.4 <= time.monotonic() - started < LOADED_BOUND_S and lease.cached_length == 0
        storage = second.cache.storage
        # nothing arrived: the reads (16 host slots) stay in flight for a later request
        assert storage is not None and not storage.draining
        assert tier(second).prefetches_in_flight == 1
        finished(second, lease, PROMPTS[0])
    finally:
        own_redis.process.signal(signal.SIGCONT)
    second.cache.wait()  # the late pages find the prompt cached: nothing to attach
    second.audited()
    nothing_held(second)
    stats = tier(second)
    assert (stats.lookups, stats.hit_pages, stats.misses, stats.restores,
            stats.not_attached) == (1, 16, 0, 0, 1)
    assert faults(second) == {}
    closed(second)


def test_timeout_admits_with_what_arrived_before_the_store_paused(
        own_redis: RedisServer) -> None:
    own_redis.start()
    written_to(own_redis, PROMPTS[0])
    second = on(own_redis, wait_policy="timeout", timeout_s=0.4)
    assert second.cache.prefetch(PROMPTS[0][:32])
    second.cache.wait()  # the first 8 pages arrived and wait on the host
    assert tier(second).restored_tokens == 32
    own_redis.process.signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        lease = admitted(second, PROMPTS[0])  # asks L3 for the other 8 pages: no answer
        assert 0.4 <= time.monotonic() - started < LOADED_BOUND_S and lease.cached_length == 32
        finished(second, lease, PROMPTS[0])
    finally:
        own_redis.process.signal(signal.SIGCONT)
    second.cache.wait()  # the late answer finds the prompt cached: nothing to attach
    nothing_held(second)
    stats = tier(second)
    assert (stats.prefetches, stats.lookups, stats.restores, stats.not_attached) == (2, 2, 1, 1)
    assert faults(second) == {}
    closed(second)


def test_timeout_leaves_an_unanswered_query_in_flight_for_a_later_request(
        own_redis: RedisServer) -> None:
    own_redis.start()
    written_to(own_redis, PROMPTS[0])
    second = on(own_redis, wait_policy="timeout", timeout_s=0.4)
    own_redis.process.signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        lease = admitted(second, PROMPTS[0])
        assert 0.4 <= time.monotonic() - started < LOADED_BOUND_S and lease.cached_length == 0
        assert tier(second).prefetches_in_flight == 1
        second.cache.abort(lease)  # the request went away; its prefetch did not
        second.audited()
    finally:
        own_redis.process.signal(signal.SIGCONT)
    second.cache.wait()
    stats = tier(second)
    assert (stats.lookups, stats.restores, stats.restored_tokens) == (1, 1, 64)
    assert served(second, PROMPTS[0]) == 64 and faults(second) == {}
    assert tier(second).prefetches == 1  # the host served it: L3 was not asked again
    closed(second)


@pytest.mark.parametrize("ending", ["reset", "close"])
@pytest.mark.parametrize("stage", ["query", "reads"])
def test_a_reset_or_close_while_io_hangs_on_a_paused_store_leaves_the_pools_whole(
        own_redis: RedisServer, stage: str, ending: str) -> None:
    own_redis.start()
    written_to(own_redis, PROMPTS[0])
    second = on(own_redis, socket_s=0.3, wait_policy="best_effort")
    if stage == "reads":
        queried(second, PROMPTS[0])  # the admit starts the reads; none arrives
    own_redis.process.signal(signal.SIGSTOP)
    try:
        lease = admitted(second, PROMPTS[0])
        assert lease.cached_length == 0
        storage = second.cache.storage
        assert storage is not None
        # nothing arrived: the prefetch stays in flight, at either stage
        assert (len(storage.pending), len(storage.draining)) == (1, 0)
        finished(second, lease, PROMPTS[0])
        if ending == "reset":
            reset_whole(second)  # waits for the I/O to time out first
            stats = tier(second)
            assert (stats.misses, stats.cancelled) == (0, 1)
            assert stats.restores == 0 and faults(second)["timeout"] == 16
        else:
            closed(second)
    finally:
        own_redis.process.signal(signal.SIGCONT)
    if ending == "reset":
        time.sleep(RETRY)
        assert second.cache.prefetch(PROMPTS[0])  # after the reset the store serves again
        second.cache.wait()
        assert served(second, PROMPTS[0]) == 64
        closed(second)
