"""A stalled Redis costs one timeout per call and per retry window, not one per try: the
client does not try a timed-out call again (``retries`` is for stale connections), and the
backend skips the store for ``retry_after_s`` after a timeout. Counted in connections to a
server that never answers (:class:`.stalled.StalledServer`) and on a clock the test moves:
nothing here measures a duration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from radixkv.storage import RedisStorage, RedisStorageConfig

from .fault_support import PROMPTS, faults, finished, settled, tier
from .stalled import ManualClock, StalledServer
from .support import empty, keys, rows
from .tier_support import engine

TIMEOUT = 0.05
"""The client's socket timeout: short, as every wait here ends by it."""
WINDOW = 10.0
"""retry_after_s, on the test's clock."""


@pytest.fixture
def stalled(tmp_path: Path) -> Iterator[StalledServer]:
    server = StalledServer(tmp_path / "stalled.sock")
    try:
        yield server
    finally:
        server.close()


def on_stalled(server: StalledServer, clock: ManualClock) -> RedisStorage:
    """A client with the default retries (1) on ``server``."""
    return RedisStorage(RedisStorageConfig(unix_socket=server.path, timeout_s=TIMEOUT,
                                           retry_after_s=WINDOW, clock=clock))


def test_a_timed_out_call_is_not_tried_again(stalled: StalledServer) -> None:
    clock = ManualClock()
    storage = on_stalled(stalled, clock)
    names = keys(300)  # three batches: the first times out, the others are not sent
    assert storage.exists_prefix(names) == 0
    assert stalled.attempts() == 1
    assert storage.stats().faults["timeout"] == 128
    assert storage.stats().faults["unavailable"] == 0  # the count stopped at the first
    storage.close()


def test_a_stalled_store_costs_one_timeout_per_retry_window(stalled: StalledServer) -> None:
    clock = ManualClock()
    storage = on_stalled(stalled, clock)
    names = keys(2)
    assert storage.get_into(names, rows(empty(2), range(2))) == [False, False]
    assert stalled.attempts() == 1
    for _ in range(3):  # within the window: no round trip, counted at once
        assert storage.exists(names) == [False, False]
        assert storage.put_from(names, rows(empty(2), range(2))) == [False, False]
    assert stalled.attempts() == 0
    clock.advance(WINDOW - 0.5)
    assert storage.exists_prefix(names) == 0 and stalled.attempts() == 0
    clock.advance(0.5)  # the window is over: one more try, one more timeout
    assert storage.exists_prefix(names) == 0 and stalled.attempts() == 1
    stats = storage.stats().faults
    assert (stats["timeout"], stats["unavailable"]) == (4, 14)
    storage.close()


def test_a_wait_complete_admit_waits_for_one_timeout_per_retry_window(
        stalled: StalledServer) -> None:
    clock = ManualClock()
    made = engine(on_stalled(stalled, clock), wait_policy="wait_complete", write=False)
    cache = made.cache
    lease = cache.admit(PROMPTS[0], load_back=True)  # the query: one try, then a miss
    assert lease.cached_length == 0 and stalled.attempts() == 1
    assert tier(made).misses == 1
    finished(made, lease, PROMPTS[0])
    for tokens in PROMPTS[1:]:  # the window: each admit's query fails at once
        lease = cache.admit(tokens, load_back=True)
        assert lease.cached_length == 0
        finished(made, lease, tokens)
    assert stalled.attempts() == 0
    clock.advance(WINDOW)
    lease = cache.admit(PROMPTS[0][:32] + [1] * 32, load_back=True)
    assert lease.cached_length == 32 and stalled.attempts() == 1  # the device served 32
    cache.abort(lease)
    assert faults(made) == {"timeout": 16 + 8, "unavailable": 3 * 16}
    made.audited()
    cache.close()


def test_writes_to_a_stalled_store_share_the_retry_window_of_its_lookups(
        stalled: StalledServer) -> None:
    clock = ManualClock()
    made = engine(on_stalled(stalled, clock), wait_policy="wait_complete")
    for rounds in range(2):
        for tokens in PROMPTS:
            lease = made.cache.admit([rounds, *tokens], load_back=True)
            finished(made, lease, [rounds, *tokens])  # the backups land, the puts go out
            settled(made)  # every put ended
        # the first admit's query timed out; every put after it fell in its window
        assert stalled.attempts() == 1
        clock.advance(WINDOW)
    stats = tier(made)
    assert (stats.written_pages, stats.failed_pages) == (0, 2 * 64)
    assert faults(made) == {"timeout": 2 * 16, "unavailable": 2 * (3 * 16 + 64)}
    made.cache.close()
