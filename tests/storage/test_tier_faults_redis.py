"""Redis faults through whole caches on a redis-server of each test's own: down at start,
killed between writes and between an L3 query and its read, restarted, paused past the
socket timeout, full under noeviction, a page evicted between exists and get, a damaged
value. The caches keep serving the right bytes, hold nothing, and count every fault."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from radixkv.storage import RedisStorage, RedisStorageConfig

from .fault_support import (
    PROMPTS,
    admitted,
    closed,
    faults,
    finished,
    full_keys,
    nothing_held,
    queried,
    reset_whole,
    served,
    tier,
)
from .servers import RedisServer, missing
from .tier_support import PAGE, Engine, engine

pytestmark = pytest.mark.skipif(missing("redis-server") is not None,
                                reason=str(missing("redis-server")))
RETRY = 0.5


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test alone (not started: the test may start it late)."""
    own = RedisServer(tmp_path / "redis")
    try:
        yield own
    finally:
        own.stop()


def on(server: RedisServer, *, socket_s: float = 5.0, **storage: object) -> Engine:
    """An engine on ``server``, its socket timeout ``socket_s``; ``storage``: StorageTier's."""
    config = RedisStorageConfig(unix_socket=server.socket, timeout_s=socket_s,
                                retry_after_s=RETRY)
    return engine(RedisStorage(config), **{"wait_policy": "wait_complete", **storage})


def settled(made: Engine) -> None:
    assert made.cache.storage is not None
    made.cache.storage.settle()
    made.audited()


def written(server: RedisServer, *prompts: list[int]) -> None:
    first = on(server)
    for tokens in prompts:
        assert served(first, tokens) == 0
    settled(first)
    assert tier(first).written_pages == 16 * len(prompts)
    closed(first)


def test_a_server_down_at_start_costs_misses_and_later_requests_hit(
        server: RedisServer) -> None:
    first = on(server)
    assert served(first, PROMPTS[0]) == 0
    settled(first)
    stats = tier(first)
    assert (stats.misses, stats.written_pages, stats.failed_pages) == (1, 0, 16)
    assert faults(first) == {"unavailable": 32}  # the query's 16 pages, the put's 16
    server.start()
    time.sleep(RETRY)
    assert served(first, PROMPTS[1]) == 0
    settled(first)
    assert tier(first).written_pages == 16 and faults(first) == {"unavailable": 32}
    second = on(server)
    assert [served(second, tokens) for tokens in PROMPTS[:2]] == [0, 64]
    assert faults(second) == {}
    closed(first)
    closed(second)


def test_a_server_killed_between_writes_then_restarted_serves_again(
        server: RedisServer) -> None:
    server.start()
    first = on(server)
    assert served(first, PROMPTS[0]) == 0
    settled(first)  # its put landed
    server.process.kill()
    assert served(first, PROMPTS[1]) == 0
    settled(first)
    stats = tier(first)
    assert (stats.written_pages, stats.failed_pages) == (16, 16)
    assert faults(first) == {"unavailable": 32}
    server.start()  # no persistence: it comes back empty
    time.sleep(RETRY)
    assert served(first, PROMPTS[2]) == 0
    settled(first)
    assert tier(first).written_pages == 32
    second = on(server)
    assert [served(second, tokens) for tokens in PROMPTS[:3]] == [0, 0, 64]
    reset_whole(first)
    closed(first)
    closed(second)


def test_a_server_killed_between_query_and_read_is_a_miss_that_pins_nothing(
        server: RedisServer) -> None:
    server.start()
    written(server, PROMPTS[0])
    second = on(server)
    queried(second, PROMPTS[0])
    server.process.kill()
    second.cache.wait()
    nothing_held(second)
    stats = tier(second)
    assert (stats.lookups, stats.hit_pages, stats.misses, stats.restores) == (1, 16, 1, 0)
    assert faults(second) == {"unavailable": 16}
    assert served(second, PROMPTS[0]) == 0  # its own query: down, a miss at once
    settled(second)
    assert faults(second) == {"unavailable": 48}  # the query, the put of what it computed
    reset_whole(second)
    closed(second)


def test_a_paused_server_times_out_as_a_miss_and_hits_again_once_resumed(
        server: RedisServer) -> None:
    server.start()
    written(server, *PROMPTS[:2])
    second = on(server, socket_s=0.3)
    server.process.signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert served(second, PROMPTS[0]) == 0
        assert 0.3 <= time.monotonic() - started < 3
        settled(second)  # its put went out within retry_after_s: refused at once
        assert faults(second) == {"timeout": 16, "unavailable": 16}
    finally:
        server.process.signal(signal.SIGCONT)
    time.sleep(RETRY)
    assert served(second, PROMPTS[1]) == 64
    assert faults(second) == {"timeout": 16, "unavailable": 16}
    closed(second)


def test_best_effort_admits_at_once_while_the_store_is_paused(server: RedisServer) -> None:
    server.start()
    written(server, PROMPTS[0])
    second = on(server, wait_policy="best_effort")
    server.process.signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        lease = admitted(second, PROMPTS[0])
        assert time.monotonic() - started < 0.25 and lease.cached_length == 0
        assert tier(second).prefetches_in_flight == 1
        finished(second, lease, PROMPTS[0])
    finally:
        server.process.signal(signal.SIGCONT)
    second.cache.wait()  # the late answer finds the prompt cached: nothing to attach
    nothing_held(second)
    stats = tier(second)
    assert (stats.lookups, stats.restores, stats.not_attached) == (1, 0, 1)
    assert faults(second) == {}
    closed(second)


def test_wait_complete_waits_for_a_paused_store_to_answer(server: RedisServer) -> None:
    server.start()
    written(server, PROMPTS[0])
    second = on(server)
    server.process.signal(signal.SIGSTOP)
    resume = threading.Timer(0.5, server.process.signal, (signal.SIGCONT,))
    resume.start()
    started = time.monotonic()
    try:
        assert served(second, PROMPTS[0]) == 64
        assert time.monotonic() - started >= 0.5
    finally:
        resume.join()
    assert faults(second) == {} and tier(second).restored_tokens == 64
    closed(second)


def test_timeout_admits_after_timeout_s_and_frees_the_late_reads_slots(
        server: RedisServer) -> None:
    server.start()
    written(server, PROMPTS[0])
    second = on(server, wait_policy="timeout", timeout_s=0.4)
    queried(second, PROMPTS[0])  # the query answered; its reads will find the store paused
    server.process.signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        lease = admitted(second, PROMPTS[0])
        assert 0.4 <= time.monotonic() - started < 1.5 and lease.cached_length == 0
        storage = second.cache.storage
        assert storage is not None and storage.draining  # 16 host slots await the reads
        finished(second, lease, PROMPTS[0])
    finally:
        server.process.signal(signal.SIGCONT)
    settled(second)
    nothing_held(second)
    stats = tier(second)
    assert (stats.lookups, stats.hit_pages, stats.misses, stats.restores) == (1, 16, 1, 0)
    assert faults(second) == {}
    closed(second)


def test_a_full_store_under_noeviction_is_counted_and_serves_once_it_has_room(
        server: RedisServer) -> None:
    server.start()
    client = redis.Redis(unix_socket_path=server.socket)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", "1")  # below what the server itself uses: every set refused
    first = on(server)
    assert served(first, PROMPTS[0]) == 0
    settled(first)
    assert (tier(first).written_pages, tier(first).failed_pages) == (0, 16)
    assert faults(first) == {"full": 16}
    client.config_set("maxmemory", "0")
    assert served(first, PROMPTS[1]) == 0
    second = on(server)
    assert [served(second, tokens) for tokens in PROMPTS[:2]] == [0, 64]
    assert faults(second) == {}
    closed(first)
    closed(second)


@pytest.mark.parametrize("damage", ["evicted", "truncated", "other page"])
def test_a_page_lost_or_damaged_after_the_query_cuts_the_restore_before_it(
        server: RedisServer, damage: str) -> None:
    server.start()
    written(server, PROMPTS[0])
    second = on(server)
    queried(second, PROMPTS[0])
    client, names = redis.Redis(unix_socket_path=server.socket), full_keys(PROMPTS[0])
    data = f"radixkv:d:{names[7]}"
    if damage == "evicted":
        client.delete(data)  # what maxmemory eviction does: the marker stays
    elif damage == "truncated":
        client.set(data, client.get(data)[:-3])  # type: ignore[index]
    else:
        client.set(data, client.get(f"radixkv:d:{names[8]}"))  # type: ignore[arg-type]
    second.cache.wait()
    nothing_held(second)
    assert tier(second).restored_tokens == 7 * PAGE
    assert faults(second) == {"missing" if damage == "evicted" else "corrupt": 1}
    assert served(second, PROMPTS[0]) == 7 * PAGE
    closed(second)


@pytest.mark.parametrize("ending", ["reset", "close"])
@pytest.mark.parametrize("stage", ["query", "reads"])
def test_a_reset_or_close_while_io_hangs_on_a_paused_store_leaves_the_pools_whole(
        server: RedisServer, stage: str, ending: str) -> None:
    server.start()
    written(server, PROMPTS[0])
    second = on(server, socket_s=0.3, wait_policy="best_effort")
    if stage == "reads":
        queried(second, PROMPTS[0])  # the admit starts the reads, then drops what is late
    server.process.signal(signal.SIGSTOP)
    try:
        lease = admitted(second, PROMPTS[0])
        assert lease.cached_length == 0
        storage = second.cache.storage
        assert storage is not None
        assert (len(storage.pending), len(storage.draining)) == \
            ((0, 1) if stage == "reads" else (1, 0))
        finished(second, lease, PROMPTS[0])
        if ending == "reset":
            reset_whole(second)  # waits for the I/O to time out first
            stats = tier(second)
            assert (stats.misses, stats.cancelled) == ((1, 0) if stage == "reads" else (0, 1))
            assert stats.restores == 0 and faults(second)["timeout"] == 16
        else:
            closed(second)
    finally:
        server.process.signal(signal.SIGCONT)
    if ending == "reset":
        time.sleep(RETRY)
        assert second.cache.prefetch(PROMPTS[0])  # after the reset the store serves again
        second.cache.wait()
        assert served(second, PROMPTS[0]) == 64
        closed(second)
