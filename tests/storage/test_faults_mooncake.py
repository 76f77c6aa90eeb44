"""MooncakeStorage faults against a real Mooncake cluster: master down at start, killed,
restarted; a full store; objects removed between exists and get, truncated or corrupt.
Each reads as misses, is counted, and never raises."""

from __future__ import annotations

import time

import numpy as np
import pytest

from radixkv.storage import MooncakeStorage
from radixkv.storage.framing import frame

from .servers import LEASE_MS, MooncakeCluster, eventually, missing, mooncake_backend
from .support import PAGE, ROW, assert_hits_exact, empty, host, keys, rows

pytestmark = pytest.mark.skipif(missing("mooncake_master") is not None,
                                reason=str(missing("mooncake_master")))
RETRY = 0.5


def raw(cluster: MooncakeCluster) -> MooncakeStorage:
    """A second client, for what another (faulty) writer would do."""
    return mooncake_backend(cluster)


def test_a_master_down_at_start_costs_misses_and_recovers_when_it_starts(
        own_cluster: MooncakeCluster) -> None:
    storage = mooncake_backend(own_cluster, retry_after_s=RETRY)
    names, source = keys(2), host(2)
    assert storage.put_from(names, rows(source, range(2))) == [False, False]
    assert storage.exists_prefix(names) == 0
    assert storage.get_into(names, rows(empty(2), range(2))) == [False, False]
    assert storage.stats().faults["unavailable"] >= 6
    own_cluster.start()
    assert eventually(lambda: storage.put_from(names, rows(source, range(2))) == [True] * 2)
    target = empty(2)
    assert storage.get_into(names, rows(target, range(2))) == [True, True]
    np.testing.assert_array_equal(target, source)
    storage.close()


def test_a_master_killed_mid_run_then_restarted_reads_as_misses(
        own_cluster: MooncakeCluster) -> None:
    own_cluster.start()
    storage = mooncake_backend(own_cluster, retry_after_s=RETRY)
    names, source = keys(3), host(3)
    assert storage.put_from(names, rows(source, range(3))) == [True] * 3
    own_cluster.master.kill()
    target = empty(3)
    assert storage.get_into(names, rows(target, range(3))) == [False] * 3
    assert storage.exists_prefix(names) == 0
    assert storage.put_from(names, rows(source, range(3))) == [False] * 3
    assert not target.any()
    assert storage.stats().faults["unavailable"] >= 9
    own_cluster.start_master()  # a new master knows no objects; the segment re-mounts
    assert eventually(lambda: storage.put_from(names, rows(source, range(3))) == [True] * 3)
    assert storage.get_into(names, rows(target, range(3))) == [True] * 3
    np.testing.assert_array_equal(target, source)
    storage.close()


def test_a_full_store_refuses_or_evicts_pages_but_never_returns_wrong_bytes(
        own_cluster: MooncakeCluster) -> None:
    own_cluster.start()
    storage = mooncake_backend(own_cluster)
    wide = (2, 2048)  # 32 KiB pages: 1000 of them are twice the 16 MB segment
    count = 1000
    source = np.random.default_rng(2).standard_normal((count * PAGE, *wide)).astype(np.float16)
    names = keys(count)
    stored = storage.put_from(names, rows(source, range(count)))
    target = np.zeros_like(source)
    got = storage.get_into(names, rows(target, range(count)))
    assert 0 < sum(got) < count
    assert_hits_exact(got, target, source)
    faults = storage.stats().faults
    assert faults["full"] == stored.count(False)
    assert faults["missing"] == got.count(False)  # refused, or evicted since stored
    assert all(was_stored for was_stored, ok in zip(stored, got) if ok)
    assert faults["corrupt"] == 0
    storage.close()


def test_an_object_removed_between_exists_and_get_is_a_counted_miss(
        mooncake_cluster: MooncakeCluster) -> None:
    storage, other = mooncake_backend(mooncake_cluster), raw(mooncake_cluster)
    names = keys(3)
    storage.put_from(names, rows(host(3), range(3)))
    assert storage.exists_prefix(names) == 3
    time.sleep(2 * LEASE_MS / 1000)  # the lease exists took blocks removal until it ends
    other.remove(names[1:2])
    assert storage.get_into(names, rows(empty(3), range(3))) == [True, False, True]
    assert storage.stats().faults["missing"] == 1
    storage.close()
    other.close()


@pytest.mark.parametrize("damage", ["truncated", "flipped", "other key", "garbage"])
def test_a_damaged_object_reads_as_a_corrupt_miss(mooncake_cluster: MooncakeCluster,
                                                  damage: str) -> None:
    storage, names = mooncake_backend(mooncake_cluster), keys(2)
    payload = host(1).tobytes()
    good = frame(names[0], payload)
    blob = {"truncated": good[:-9], "flipped": good[:-1] + bytes([good[-1] ^ 1]),
            "other key": frame(names[1], payload), "garbage": b"x" * 300}[damage]
    storage._connected().put_batch([names[0]], [blob])  # a faulty writer's object
    storage.put_from(names[1:], rows(host(1), [0]))
    target = np.full((2 * PAGE, *ROW), 9, dtype=np.float16)
    assert storage.get_into(names, rows(target, range(2))) == [False, True]
    assert (target[:PAGE] == 9).all()
    assert storage.stats().faults["corrupt"] == 1
    # deleted at once, the lease our own read took notwithstanding
    assert storage.exists(names) == [False, True] and storage.stats().purged_pages == 1
    storage.close()


def test_the_segment_holder_killed_loses_its_pages_as_misses(
        own_cluster: MooncakeCluster) -> None:
    own_cluster.start()
    storage = mooncake_backend(own_cluster, retry_after_s=RETRY)
    names, source = keys(3), host(3)
    assert storage.put_from(names, rows(source, range(3))) == [True] * 3
    own_cluster.segment.kill()
    target = empty(3)
    assert storage.get_into(names, rows(target, range(3))) == [False] * 3
    assert not target.any()
    faults = storage.stats().faults
    assert faults["corrupt"] == 0 and faults["error"] + faults["missing"] == 3
    # until the master gives the dead holder up (client_ttl), it still lists the pages and
    # refuses to overwrite them: they keep reading as misses; then they can be written again
    assert eventually(lambda: storage.exists_prefix(names) == 0)
    own_cluster.segment.start()
    assert eventually(lambda: storage.put_from(names, rows(source, range(3))) == [True] * 3)
    assert storage.get_into(names, rows(target, range(3))) == [True] * 3
    np.testing.assert_array_equal(target, source)
    storage.close()
