"""Redis faults through whole caches on a redis-server of each test's own: down at start,
killed between writes and between an L3 query and its read, restarted, paused past the
socket timeout (reads, and write-back puts), full under noeviction, pages evicted under
maxmemory, a page evicted between exists and get, a damaged value. The caches keep serving
the right bytes, hold nothing, and count every fault."""

from __future__ import annotations

import signal
import time

import pytest
import redis

from .fault_support import (
    PROMPTS,
    closed,
    faults,
    full_keys,
    nothing_held,
    queried,
    reset_whole,
    served,
    settled,
    tier,
)
from .redis_tier import RETRY, on, written_to
from .servers import RedisServer, missing
from .tier_support import PAGE

pytestmark = pytest.mark.skipif(missing("redis-server") is not None,
                                reason=str(missing("redis-server")))


def test_a_server_down_at_start_costs_misses_and_later_requests_hit(
        own_redis: RedisServer) -> None:
    first = on(own_redis)
    assert served(first, PROMPTS[0]) == 0
    settled(first)
    stats = tier(first)
    assert (stats.misses, stats.written_pages, stats.failed_pages) == (1, 0, 16)
    assert faults(first) == {"unavailable": 32}  # the query's 16 pages, the put's 16
    own_redis.start()
    time.sleep(RETRY)
    assert served(first, PROMPTS[1]) == 0
    settled(first)
    assert tier(first).written_pages == 16 and faults(first) == {"unavailable": 32}
    second = on(own_redis)
    assert [served(second, tokens) for tokens in PROMPTS[:2]] == [0, 64]
    assert faults(second) == {}
    closed(first)
    closed(second)


def test_a_server_killed_between_writes_then_restarted_serves_again(
        own_redis: RedisServer) -> None:
    own_redis.start()
    first = on(own_redis)
    assert served(first, PROMPTS[0]) == 0
    settled(first)  # its put landed
    own_redis.process.kill()
    assert served(first, PROMPTS[1]) == 0
    settled(first)
    stats = tier(first)
    assert (stats.written_pages, stats.failed_pages) == (16, 16)
    assert faults(first) == {"unavailable": 32}
    own_redis.start()  # no persistence: it comes back empty
    time.sleep(RETRY)
    assert served(first, PROMPTS[2]) == 0
    settled(first)
    assert tier(first).written_pages == 32
    second = on(own_redis)
    assert [served(second, tokens) for tokens in PROMPTS[:3]] == [0, 0, 64]
    reset_whole(first)
    closed(first)
    closed(second)


def test_a_server_killed_between_query_and_read_is_a_miss_that_pins_nothing(
        own_redis: RedisServer) -> None:
    own_redis.start()
    written_to(own_redis, PROMPTS[0])
    second = on(own_redis)
    queried(second, PROMPTS[0])
    own_redis.process.kill()
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
        own_redis: RedisServer) -> None:
    own_redis.start()
    written_to(own_redis, *PROMPTS[:2])
    second = on(own_redis, socket_s=0.3)
    own_redis.process.signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert served(second, PROMPTS[0]) == 0
        assert 0.3 <= time.monotonic() - started < 3
        settled(second)  # its put went out within retry_after_s: refused at once
        assert faults(second) == {"timeout": 16, "unavailable": 16}
    finally:
        own_redis.process.signal(signal.SIGCONT)
    time.sleep(RETRY)
    assert served(second, PROMPTS[1]) == 64
    assert faults(second) == {"timeout": 16, "unavailable": 16}
    closed(second)


def test_write_back_puts_that_time_out_are_counted_and_never_read_wrong(
        own_redis: RedisServer) -> None:
    own_redis.start()
    first = on(own_redis, socket_s=0.3, write_policy="write_back")
    assert served(first, PROMPTS[0]) == 0
    first.cache.evict(full=10**6)  # demoted to the host: write-back writes nothing yet
    first.audited()
    host = first.cache.host
    assert host is not None
    own_redis.process.signal(signal.SIGSTOP)
    try:
        host.evict_host([10**6])  # now it writes
        first.audited()
        settled(first)
        stats = tier(first)
        assert (stats.queued_pages, stats.written_pages, stats.failed_pages) == (16, 0, 16)
        assert faults(first) == {"timeout": 16}
    finally:
        own_redis.process.signal(signal.SIGCONT)
    closed(first)
    time.sleep(RETRY)
    second = on(own_redis)
    # the timed-out puts sat in the paused server's socket and ran once it resumed: a
    # "failed" page is one the store did not confirm, and its bytes are right either way
    assert served(second, PROMPTS[0]) == 64 and faults(second) == {}
    closed(second)


def test_a_full_store_under_noeviction_is_counted_and_serves_once_it_has_room(
        own_redis: RedisServer) -> None:
    own_redis.start()
    client = redis.Redis(unix_socket_path=own_redis.socket)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", "1")  # below what the own_redis itself uses: every set refused
    first = on(own_redis)
    assert served(first, PROMPTS[0]) == 0
    settled(first)
    assert (tier(first).written_pages, tier(first).failed_pages) == (0, 16)
    assert faults(first) == {"full": 16}
    client.config_set("maxmemory", "0")
    assert served(first, PROMPTS[1]) == 0
    second = on(own_redis)
    assert [served(second, tokens) for tokens in PROMPTS[:2]] == [0, 64]
    assert faults(second) == {}
    closed(first)
    closed(second)


def test_pages_evicted_under_maxmemory_read_as_misses_never_as_wrong_data(
        own_redis: RedisServer) -> None:
    own_redis.start()
    client = redis.Redis(unix_socket_path=own_redis.socket)
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory-policy", "allkeys-lru")
    client.config_set("maxmemory", str(used + 150_000))  # less than 60 prompts take
    prompts = [list(range(base, base + 64)) for base in range(10_000, 70_000, 1000)]
    first = on(own_redis)
    for tokens in prompts:
        assert served(first, tokens) == 0
    settled(first)
    assert faults(first) == {}  # every put taken: room is made by evicting others
    assert int(client.info("stats")["evicted_keys"]) > 0
    closed(first)
    second = on(own_redis, write=False)  # a reader only: its writes would evict more
    cached = [served(second, tokens) for tokens in prompts]  # each checks its bytes
    assert sum(cached) < 64 * len(prompts) and tier(second).queued_pages == 0
    assert set(faults(second)) <= {"missing"}  # a marker whose data was evicted
    closed(second)


@pytest.mark.parametrize("damage", ["evicted", "truncated", "other page"])
def test_a_page_lost_or_damaged_after_the_query_cuts_the_restore_before_it(
        own_redis: RedisServer, damage: str) -> None:
    own_redis.start()
    written_to(own_redis, PROMPTS[0])
    second = on(own_redis)
    queried(second, PROMPTS[0])
    client, names = redis.Redis(unix_socket_path=own_redis.socket), full_keys(PROMPTS[0])
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
