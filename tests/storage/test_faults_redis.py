"""RedisStorage faults against a real redis-server: down at start, killed, restarted,
paused past the timeout, full under maxmemory, evicted, corrupted. Each reads as misses,
is counted, and never raises."""

from __future__ import annotations

import signal
import time

import numpy as np
import pytest
import redis

from radixkv.storage import RedisStorage, RedisStorageConfig, StorageWorker

from .servers import RedisServer, missing
from .support import PAGE, ROW, assert_hits_exact, empty, host, keys, rows

pytestmark = pytest.mark.skipif(missing("redis-server") is not None,
                                reason=str(missing("redis-server")))
RETRY = 0.3
WIDE = (2, 512)
"""Rows of the store-filling tests: 8 KiB pages, 600 of them overflow a 2 MB maxmemory."""


def wide(pages: int) -> np.ndarray:
    return np.random.default_rng(1).standard_normal((pages * PAGE, *WIDE)).astype(np.float16)


def storage_of(server: RedisServer, **settings: object) -> RedisStorage:
    config = RedisStorageConfig(unix_socket=server.socket, timeout_s=0.5, retry_after_s=RETRY,
                                **settings)  # type: ignore[arg-type]
    return RedisStorage(config)


def raw(server: RedisServer) -> redis.Redis:
    return redis.Redis(unix_socket_path=server.socket)


def test_a_server_down_at_start_costs_misses_and_recovers_when_it_starts(
        own_redis: RedisServer) -> None:
    storage, names, source = storage_of(own_redis), keys(2), host(2)
    assert storage.put_from(names, rows(source, range(2))) == [False, False]
    assert storage.exists_prefix(names) == 0
    assert storage.get_into(names, rows(empty(2), range(2))) == [False, False]
    assert storage.stats().faults["unavailable"] == 6
    own_redis.start()
    time.sleep(RETRY)
    assert storage.put_from(names, rows(source, range(2))) == [True, True]
    assert storage.exists_prefix(names) == 2


def test_a_server_killed_mid_run_then_restarted_reads_as_misses(
        own_redis: RedisServer) -> None:
    own_redis.start()
    storage, names, source = storage_of(own_redis), keys(3), host(3)
    assert storage.put_from(names, rows(source, range(3))) == [True] * 3
    own_redis.process.kill()
    target = empty(3)
    assert storage.get_into(names, rows(target, range(3))) == [False] * 3
    assert storage.exists_prefix(names) == 0  # within retry_after: not even tried
    assert not target.any()
    assert storage.stats().faults["unavailable"] == 6
    own_redis.start()  # no persistence: the restarted server is empty
    time.sleep(RETRY)
    assert storage.exists_prefix(names) == 0
    assert storage.put_from(names, rows(source, range(3))) == [True] * 3
    assert storage.get_into(names, rows(target, range(3))) == [True] * 3
    np.testing.assert_array_equal(target, source)


def test_a_paused_server_times_out_without_blocking_the_submitting_thread(
        own_redis: RedisServer) -> None:
    own_redis.start()
    storage, names = storage_of(own_redis), keys(2)
    storage.put_from(names, rows(host(2), range(2)))
    own_redis.process.signal(signal.SIGSTOP)
    try:
        with StorageWorker(storage) as worker:
            started = time.monotonic()
            future = worker.get_into(names, rows(empty(2), range(2)))
            submitted = time.monotonic() - started
            assert future.result(10) == [False, False]
            waited = time.monotonic() - started
            assert submitted < 0.1 <= 0.4 <= waited
            assert worker.stats().faults["timeout"] == 2
    finally:
        own_redis.process.signal(signal.SIGCONT)


def test_a_full_store_under_noeviction_refuses_puts_as_full(own_redis: RedisServer) -> None:
    own_redis.start()
    raw(own_redis).config_set("maxmemory", "2mb")
    raw(own_redis).config_set("maxmemory-policy", "noeviction")
    storage, count = storage_of(own_redis), 600
    names, source = keys(count), wide(count)
    flags = storage.put_from(names, rows(source, range(count)))
    refused = flags.count(False)
    assert refused > 0 and storage.stats().faults["full"] == refused
    target = np.zeros_like(source)
    got = storage.get_into(names, rows(target, range(count)))
    assert got == flags
    assert_hits_exact(got, target, source)


def test_pages_evicted_under_maxmemory_read_as_misses_never_as_wrong_data(
        own_redis: RedisServer) -> None:
    own_redis.start()
    raw(own_redis).config_set("maxmemory", "2mb")
    raw(own_redis).config_set("maxmemory-policy", "allkeys-random")
    storage, count = storage_of(own_redis), 600
    names, source = keys(count), wide(count)
    assert storage.put_from(names, rows(source, range(count))) == [True] * count
    target = np.zeros_like(source)
    got = storage.get_into(names, rows(target, range(count)))
    assert not all(got)  # the store could not hold them all
    assert_hits_exact(got, target, source)
    stats = storage.stats()
    assert stats.faults["missing"] == got.count(False) and stats.faults["corrupt"] == 0


def test_data_evicted_between_exists_and_get_is_a_counted_miss(
        redis_server: RedisServer) -> None:
    storage, names = storage_of(redis_server, prefix="evict"), keys(3)
    storage.put_from(names, rows(host(3), range(3)))
    assert storage.exists_prefix(names) == 3
    raw(redis_server).delete(f"evict:d:{names[1]}")  # what maxmemory eviction does
    assert storage.get_into(names, rows(empty(3), range(3))) == [True, False, True]
    assert storage.stats().faults["missing"] == 1


def test_a_marker_whose_data_is_gone_is_deleted_once_a_read_found_it(
        redis_server: RedisServer) -> None:
    storage, names = storage_of(redis_server, prefix="orphan"), keys(3)
    storage.put_from(names, rows(host(3), range(3)))
    client = raw(redis_server)
    client.delete(f"orphan:d:{names[1]}")  # maxmemory eviction took the data, not the marker
    assert storage.exists_prefix(names) == 3  # lookups read markers only
    assert storage.get_into(names, rows(empty(3), range(3))) == [True, False, True]
    assert client.exists(f"orphan:m:{names[1]}") == 0
    assert storage.exists_prefix(names) == 1  # no engine's lookup finds it again
    stats = storage.stats()
    assert (stats.faults["missing"], stats.purged_pages) == (1, 1)


@pytest.mark.parametrize("damage", ["truncate", "flip", "swap", "garbage"])
def test_a_damaged_value_reads_as_a_corrupt_miss(redis_server: RedisServer,
                                                 damage: str) -> None:
    storage, names = storage_of(redis_server, prefix=f"damage-{damage}"), keys(2)
    storage.put_from(names, rows(host(2), range(2)))
    client, data = raw(redis_server), f"damage-{damage}:d:{names[0]}"
    blob = client.get(data)
    assert isinstance(blob, bytes)
    if damage == "truncate":
        client.set(data, blob[:-5])
    elif damage == "flip":
        client.setrange(data, len(blob) - 1, bytes([blob[-1] ^ 0xFF]))
    elif damage == "swap":
        client.set(data, client.get(f"damage-{damage}:d:{names[1]}"))
    else:
        client.set(data, b"not a page")
    target = np.full((2 * PAGE, *ROW), 5, dtype=np.float16)
    assert storage.get_into(names, rows(target, range(2))) == [False, True]
    assert (target[:PAGE] == 5).all()
    assert storage.stats().faults["corrupt"] == 1
    # deleted, object and marker: no engine reads it again
    assert (client.exists(data), client.exists(f"damage-{damage}:m:{names[0]}")) == (0, 0)


def test_clear_drops_only_this_prefix(redis_server: RedisServer) -> None:
    mine, theirs = storage_of(redis_server, prefix="mine"), storage_of(redis_server,
                                                                        prefix="theirs")
    names = keys(2)
    mine.put_from(names, rows(host(2), range(2)))
    theirs.put_from(names, rows(host(2), range(2)))
    mine.clear()
    assert (mine.exists_prefix(names), theirs.exists_prefix(names)) == (0, 2)
