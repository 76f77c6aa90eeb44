"""Mooncake faults through whole caches, each test on a cluster of its own: the master down
at start, killed between an L3 query and its read and restarted, an object removed after
the query, a faulty writer's damaged object. The caches keep serving the right bytes,
hold nothing, and count every fault."""

from __future__ import annotations

import time

import pytest

from radixkv.storage.framing import frame

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
    written,
)
from .servers import LEASE_MS, MooncakeCluster, eventually, missing, mooncake_backend
from .tier_support import PAGE, ROW, Engine, engine

pytestmark = pytest.mark.skipif(missing("mooncake_master") is not None,
                                reason=str(missing("mooncake_master")))
RETRY = 0.5


def on(cluster: MooncakeCluster) -> Engine:
    return engine(mooncake_backend(cluster, retry_after_s=RETRY), wait_policy="wait_complete")


def written_once_back(made: Engine) -> list[int]:
    """Serve fresh prompts until one is written whole (the client reconnected); it."""
    tried: list[list[int]] = []

    def a_new_prompt_is_written() -> bool:
        tried.append(list(range(5000 + 100 * len(tried), 5064 + 100 * len(tried))))
        before = tier(made).written_pages
        assert served(made, tried[-1]) == 0
        settled(made)
        return tier(made).written_pages == before + 16

    assert eventually(a_new_prompt_is_written, timeout=15)
    return tried[-1]


def test_a_master_down_at_start_costs_misses_and_later_requests_hit(
        own_cluster: MooncakeCluster) -> None:
    first = on(own_cluster)
    assert served(first, PROMPTS[0]) == 0
    settled(first)
    stats = tier(first)
    assert (stats.misses, stats.written_pages, stats.failed_pages) == (1, 0, 16)
    assert set(faults(first)) == {"unavailable"} and faults(first)["unavailable"] >= 32
    own_cluster.start()
    tokens = written_once_back(first)
    second = on(own_cluster)
    assert served(second, tokens) == 64 and faults(second) == {}
    closed(first)
    closed(second)


def test_a_master_killed_between_query_and_read_is_a_miss_then_restarted_hits(
        own_cluster: MooncakeCluster) -> None:
    own_cluster.start()
    written(lambda: on(own_cluster), PROMPTS[0])
    second = on(own_cluster)
    queried(second, PROMPTS[0])
    own_cluster.master.kill()
    second.cache.wait()
    nothing_held(second)
    stats = tier(second)
    assert (stats.lookups, stats.hit_pages, stats.restores, stats.restored_tokens) == \
        (1, 16, 0, 0)
    assert stats.misses == 1
    assert set(faults(second)) == {"unavailable"} and faults(second)["unavailable"] >= 16
    assert served(second, PROMPTS[0]) == 0
    own_cluster.start_master()  # a new master knows no objects; the segment re-mounts
    tokens = written_once_back(second)
    third = on(own_cluster)
    assert served(third, PROMPTS[0]) == 0 and served(third, tokens) == 64
    assert faults(third) == {}
    reset_whole(second)
    closed(second)
    closed(third)


def test_an_object_removed_after_the_query_cuts_the_restore_before_it(
        own_cluster: MooncakeCluster) -> None:
    own_cluster.start()
    written(lambda: on(own_cluster), PROMPTS[0])
    second = on(own_cluster)
    queried(second, PROMPTS[0])
    time.sleep(2 * LEASE_MS / 1000)  # the lease the query took blocks removal until it ends
    other = mooncake_backend(own_cluster)
    other.remove(full_keys(PROMPTS[0])[6:7])
    other.close()
    second.cache.wait()
    nothing_held(second)
    assert tier(second).restored_tokens == 6 * PAGE
    assert faults(second) == {"missing": 1}
    assert served(second, PROMPTS[0]) == 6 * PAGE
    closed(second)


@pytest.mark.parametrize("damage", ["truncated", "other page"])
def test_a_faulty_writers_object_is_a_corrupt_miss(own_cluster: MooncakeCluster,
                                                   damage: str) -> None:
    own_cluster.start()
    names = full_keys(PROMPTS[0])
    payload = bytes(PAGE * ROW[0] * ROW[1] * 4)
    blob = frame(names[5], payload)[:-5] if damage == "truncated" else frame(names[6], payload)
    faulty = mooncake_backend(own_cluster)
    faulty._connected().put_batch([names[5]], [blob])  # first: the key then keeps it
    faulty.close()
    first = on(own_cluster)
    assert served(first, PROMPTS[0]) == 0
    closed(first)
    second = on(own_cluster)
    assert served(second, PROMPTS[0]) == 5 * PAGE
    assert faults(second) == {"corrupt": 1}
    assert (tier(second).hit_pages, tier(second).restores) == (16, 1)
    closed(second)
