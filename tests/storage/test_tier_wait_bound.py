"""Every wait of the scheduler's thread on the store ends by ``StorageTier.wait_timeout_s``,
whatever the store does: on a store that never answers (:class:`.parked.ParkedStore`, on a
clock that runs only while it is parked), an admit under any wait policy returns with what
device and host serve, and ``wait()``, ``reset()`` and ``close()`` raise
:class:`StorageTimeoutError` with the cache as it was, the I/O still in flight; once the
store answers, the same calls succeed and every page arrives whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from radixkv.errors import StorageTimeoutError
from radixkv.storage import FileStorage, FileStorageConfig

from .fault_support import (
    PROMPTS,
    admitted,
    closed,
    faults,
    finished,
    nothing_held,
    reset_whole,
    served,
    tier,
)
from .parked import ParkedStore, StallClock
from .tier_support import Engine, engine

BOUND = 5.0
"""wait_timeout_s: readings of the stall clock."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ParkedStore]:
    parked = ParkedStore(tmp_path / "l3")
    try:
        yield parked
    finally:
        parked.release()  # never leave the I/O thread waiting


def on(store: ParkedStore, **storage: Any) -> Engine:
    return engine(store, wait_timeout_s=BOUND, clock=StallClock(store), **storage)


def written(store: ParkedStore, *prompts: list[int]) -> None:
    first = engine(FileStorage(FileStorageConfig(root=store.root)))
    for tokens in prompts:
        assert served(first, tokens) == 0
    closed(first)


def state(made: Engine) -> tuple[Any, ...]:
    storage = made.cache.storage
    assert storage is not None
    return (made.cache.snapshot(), tuple(storage.pending), len(storage.draining),
            tier(made))


@pytest.mark.parametrize("policy", ["best_effort", "timeout", "wait_complete"])
def test_an_admit_on_a_store_that_never_answers_returns_by_the_bound(
        store: ParkedStore, policy: str) -> None:
    written(store, PROMPTS[0])
    second = on(store, wait_policy=policy, timeout_s=2.0)
    store.park()
    lease = second.cache.admit(PROMPTS[0], load_back=True)
    second.audited()
    assert lease.cached_length == 0 and lease.ready
    assert tier(second).prefetches_in_flight == 1
    second.cache.abort(lease)
    store.release()
    second.cache.wait()  # the late answer: restored for a later request
    assert served(second, PROMPTS[0]) == 64 and faults(second) == {}
    closed(second)


def test_wait_reset_and_close_raise_on_a_stalled_query_and_change_nothing(
        store: ParkedStore) -> None:
    written(store, PROMPTS[0])
    second = on(store, wait_policy="wait_complete")
    assert served(second, PROMPTS[1]) == 0  # something cached, its backup landed
    second.cache.wait()
    store.park()
    lease = second.cache.admit(PROMPTS[0], load_back=True)
    assert lease.cached_length == 0
    before = state(second)
    for call in (second.cache.wait, second.cache.reset, second.cache.close):
        with pytest.raises(StorageTimeoutError, match="wait_timeout_s=5"):
            call()
        second.audited()
        assert state(second) == before
    assert second.cache.storage is not None and lease in second.cache.leases()
    store.release()
    second.cache.wait()  # now it completes
    assert tier(second).restored_tokens == 64
    finished(second, lease, PROMPTS[0])
    reset_whole(second)
    closed(second)


def test_a_stalled_read_holds_its_host_slots_until_it_ends(store: ParkedStore) -> None:
    written(store, PROMPTS[0])
    second = on(store, wait_policy="wait_complete")
    assert second.cache.prefetch(PROMPTS[0])
    storage = second.cache.storage
    assert storage is not None
    (record,) = storage.pending.values()
    assert record.query is not None
    record.query.result(60)  # the query answered; its reads will meet the parked store
    store.park()
    lease = second.cache.admit(PROMPTS[0], load_back=True)  # starts the reads: none ends
    assert lease.cached_length == 0
    assert sum(len(slots) for slots in storage.reserved()) == 64
    with pytest.raises(StorageTimeoutError):
        second.cache.reset()  # the reads may still land in those slots: nothing freed
    second.audited()
    assert sum(len(slots) for slots in storage.reserved()) == 64
    second.cache.abort(lease)
    store.release()
    reset_whole(second)
    assert tier(second).cancelled == 1
    closed(second)


def test_close_raises_on_a_stalled_put_and_writes_it_once_the_store_answers(
        store: ParkedStore) -> None:
    second = on(store)
    lease = admitted(second, PROMPTS[0])
    store.park()
    finished(second, lease, PROMPTS[0])  # the backup lands at a poll, its put goes out
    second.cache.wait()
    second.cache.poll()
    with pytest.raises(StorageTimeoutError):
        second.cache.close()
    assert second.cache.storage is not None and tier(second).written_pages == 0
    store.release()
    storage = second.cache.storage
    second.cache.close()
    nothing_held(second)
    assert storage.stats().written_pages == 16
