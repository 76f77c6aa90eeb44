"""The copy engine is the serving engine's code, so the cache trusts none of its answers:
a ``submit`` that raises or answers a bad ticket, a ``poll`` that raises or answers
garbage, an ``ok`` that is not ``True``. Each such fault is counted
(``stats().host.copy_faults``) and the cache stays consistent, leaks nothing and serves
nothing that was not copied: a refused backup is simply not made, a refused load-back makes
the host part a miss, a completion that is not a clean success is a failed copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from radixkv.cache import LeaseState
from radixkv.errors import ConfigError, CopyEngineError
from radixkv.host import Completion, Copy, HostTier, NumpyCopyConfig, NumpyCopyEngine

from ..components.support import seq
from .helpers import PollClock, TierCache, kv_buffers, nodes
from .kv_model import check_owners

PROMPT = seq(0, 8)


class FaultyEngine(NumpyCopyEngine):
    """A NumpyCopyEngine (batches complete one poll late) whose next submit or poll does
    what the test sets: ``submit_fault(copies)`` raises or returns the ticket to answer
    (the batch is then dropped: the engine never carries it out); ``poll_fault(done)``
    raises or returns the answer instead of the real completions ``done``."""

    def __init__(self) -> None:
        super().__init__(NumpyCopyConfig(delay_polls=1))
        self.submit_fault: Callable[[list[Copy]], Any] | None = None
        self.poll_fault: Callable[[list[Completion]], Any] | None = None

    def submit(self, copies: Any) -> Any:
        fault, self.submit_fault = self.submit_fault, None
        if fault is None:
            return super().submit(copies)
        return fault(list(copies))

    def poll(self) -> Any:
        done = super().poll()
        fault, self.poll_fault = self.poll_fault, None
        return done if fault is None else fault(done)


def boom(*_: Any) -> Any:
    raise RuntimeError("the engine broke")


def cache_with_kv(engine: FaultyEngine, capacity: int = 16,
                  policy: str = "write_through") -> tuple[TierCache, np.ndarray, np.ndarray]:
    cache = TierCache(engine, capacity=capacity, host=HostTier(capacity=32,
                                                               write_policy=policy))
    device, host = kv_buffers(engine, "full", capacity, 32)
    return cache, device, host


def computed(cache: TierCache, device: np.ndarray, tokens: list[int]) -> int:
    """Admit ``tokens``, write their KV rows (row = 100 + token), finish; the tokens cached."""
    lease = cache.admit(tokens)
    device[lease.slots] = np.asarray(tokens)[:, None] + 100
    return int(cache.finish(lease))


def demoted(engine: FaultyEngine) -> tuple[TierCache, np.ndarray]:
    """PROMPT computed, backed up and demoted: on the host only; device rows wiped."""
    cache, device, _host = cache_with_kv(engine)
    computed(cache, device, PROMPT)
    cache.wait()
    assert cache.evict(full=16) == {"full": 8}
    device[:] = -1
    assert nodes(cache) == [(0, 8, None, seq(0, 8))]
    return cache, device


def faults(cache: TierCache) -> int:
    value: int = cache.stats().host.copy_faults
    return value


def owners_ok(cache: TierCache) -> None:
    cache.check_invariants()
    check_owners(cache.cache, cache.leases(), [])


# ---------------------------------------------------------------------- submit


def test_a_backup_whose_submit_raises_is_not_made_and_nothing_is_placed() -> None:
    engine = FaultyEngine()
    cache, device, _ = cache_with_kv(engine)
    engine.submit_fault = boom
    assert computed(cache, device, PROMPT) == 8  # finish is not failed by its backup
    assert nodes(cache) == [(0, 8, list(range(8)), None)]
    assert faults(cache) == 1 and cache.stats().host.copies_in_flight == 0
    assert cache.stats().host.components["full"].pool_available == 32
    owners_ok(cache)
    computed(cache, device, [*PROMPT, 99])  # the next use backs it up, no slot owned twice
    cache.wait()
    owners_ok(cache)
    assert nodes(cache)[0][3] is not None and faults(cache) == 1


@pytest.mark.parametrize("ticket", [True, 1.0, "3", None, -0.5, [1]])
def test_a_backup_answered_with_a_ticket_that_is_no_int_is_refused(ticket: Any) -> None:
    engine = FaultyEngine()
    cache, device, _ = cache_with_kv(engine)
    engine.submit_fault = lambda _copies: ticket
    computed(cache, device, PROMPT)
    assert nodes(cache) == [(0, 8, list(range(8)), None)]
    assert faults(cache) == 1 and not cache.host.records
    owners_ok(cache)


def test_a_ticket_already_in_flight_is_refused_and_that_copy_counts_as_failed() -> None:
    engine = FaultyEngine()
    cache, device, _ = cache_with_kv(engine)
    computed(cache, device, PROMPT)  # backup 1 in flight
    (first,) = cache.host.records
    engine.submit_fault = lambda _copies: first  # the second backup reuses ticket 1
    computed(cache, device, seq(20, 8))
    assert list(cache.host.records) == [first] and faults(cache) == 1
    owners_ok(cache)
    cache.wait()  # ticket 1's report may be either batch's: it cannot count as a success
    assert cache.stats().host.failed_backups == 1
    assert [row[3] for row in nodes(cache)] == [None, None]
    owners_ok(cache)
    assert not any(n.locks[0] for n in cache.tree.nodes.values() if n.parent is not None)


def test_a_load_back_whose_submit_raises_makes_the_host_part_a_miss() -> None:
    cache, device = demoted(engine := FaultyEngine())
    before = cache.stats()
    engine.submit_fault = boom
    lease = cache.admit([*PROMPT, 99], load_back=True)
    assert lease.cached_length == 0 and lease.ready and faults(cache) == 1
    assert nodes(cache)[0][:3] == (0, 8, None)  # no device value placed without a copy
    stats = cache.stats()
    assert stats.hit_tokens == before.hit_tokens and stats.host.load_requests == 0
    owners_ok(cache)
    cache.abort(lease)
    again = cache.admit([*PROMPT, 99], load_back=True)  # the engine works again
    assert again.cached_length == 8 and not again.ready
    cache.wait(again)
    assert device[again.slots[:8], 0].tolist() == [100 + t for t in PROMPT]
    owners_ok(cache)


@pytest.mark.parametrize("ticket", [False, "1", None])
def test_a_load_back_answered_with_a_bad_ticket_makes_the_host_part_a_miss(
        ticket: Any) -> None:
    cache, _device = demoted(engine := FaultyEngine())
    engine.submit_fault = lambda _copies: ticket
    lease = cache.admit([*PROMPT, 99], load_back=True)
    assert lease.cached_length == 0 and lease.ready and faults(cache) == 1
    owners_ok(cache)


# ---------------------------------------------------------------------- poll and wait


def test_completions_a_wait_set_aside_survive_a_poll_that_raises() -> None:
    engine = FaultyEngine()
    cache, device, _ = cache_with_kv(engine, capacity=24)
    computed(cache, device, PROMPT)
    cache.wait()
    cache.evict(full=24)
    lease = cache.admit([*PROMPT, 99], load_back=True)  # load-back in flight
    computed(cache, device, seq(30, 8))  # and a backup, submitted after it
    assert len(cache.host.records) == 2
    engine.poll()  # (the engine's own clock: both batches are now one poll from done)
    cache.wait(lease)  # the backup's completion arrives too: kept for later
    assert lease.ready and len(cache.host.records) == 1
    engine.poll_fault = boom
    assert cache.poll() == [] and faults(cache) == 1
    owners_ok(cache)
    cache.wait()
    assert not cache.host.records and engine.in_flight == 0
    assert nodes(cache)[-1][3] is not None  # the backup landed
    owners_ok(cache)


@pytest.mark.parametrize("ok", ["no", 1, "yes", None, 0, np.True_])
def test_a_completion_whose_ok_is_not_true_fails_the_load_back(ok: Any) -> None:
    cache, device = demoted(engine := FaultyEngine())
    lease = cache.admit([*PROMPT, 99], load_back=True)
    engine.fail(min(lease.waiting))  # the bytes are not copied, and the engine says "ok"
    engine.poll()  # (the engine's own clock: the batch is one poll from done)
    engine.poll_fault = lambda done: [Completion(c.ticket, ok) for c in done]
    cache.poll()
    assert lease.state is LeaseState.FAILED and faults(cache) == 1
    assert nodes(cache) == [(0, 8, None, seq(0, 8))]
    assert (device == -1).all()
    owners_ok(cache)


def _garbage(kind: str) -> Callable[[list[Completion]], Any]:
    answers: dict[str, Callable[[list[Completion]], Any]] = {
        "None": lambda done: None,
        "int": lambda done: 5,
        "str": lambda done: "done",
        "dict": lambda done: {c.ticket: c for c in done},
        "items": lambda done: [None, 3, "x", (1, True)],
        "ticket-str": lambda done: [Completion(str(c.ticket), True) for c in done],  # type: ignore[arg-type]
        "ticket-bool": lambda done: [Completion(True, True)],
        "unknown": lambda done: [Completion(999, True)],
    }
    return answers[kind]


@pytest.mark.parametrize("kind", ["None", "int", "str", "dict", "items", "ticket-str",
                                  "ticket-bool", "unknown"])
def test_garbage_from_poll_is_counted_and_ignored(kind: str) -> None:
    cache, _device = demoted(engine := FaultyEngine())
    lease = cache.admit([*PROMPT, 99], load_back=True)
    engine.poll()  # one poll from done
    engine.poll_fault = _garbage(kind)  # the real completion is lost in the garbage
    assert cache.poll() == []
    assert faults(cache) >= 1 and not lease.ready and lease.state is LeaseState.ACTIVE
    owners_ok(cache)


def test_a_ticket_reported_twice_is_applied_once() -> None:
    cache, _device = demoted(engine := FaultyEngine())
    lease = cache.admit([*PROMPT, 99], load_back=True)
    (ticket,) = lease.waiting
    engine.poll()
    engine.poll_fault = lambda done: done + done
    assert cache.poll() == [lease] and lease.ready
    assert faults(cache) == 1
    owners_ok(cache)
    engine.poll_fault = lambda done: [Completion(ticket, True)]
    cache.poll()  # and once more later: an unknown ticket now
    assert faults(cache) == 2
    owners_ok(cache)


def test_a_copy_the_engine_never_completes_fails_wait_after_its_timeout() -> None:
    engine = FaultyEngine()
    cache = TierCache(engine, capacity=16,
                      host=HostTier(capacity=32, wait_timeout_s=0.05))
    lease = cache.admit(PROMPT)
    cache.finish(lease)
    engine._pending.clear()  # the engine lost the batch: it is never reported
    with pytest.raises(CopyEngineError, match=r"not completed within 0\.05 s"):
        cache.wait()
    with pytest.raises(CopyEngineError):
        cache.reset()
    assert cache.stats().host.copies_in_flight == 1  # still in flight: nothing freed
    owners_ok(cache)


class _CountingEngine(FaultyEngine):
    def __init__(self) -> None:
        super().__init__()
        self.polls = 0

    def poll(self) -> Any:
        self.polls += 1
        return super().poll()


def test_on_a_clock_of_polls_the_wait_timeout_is_a_count_of_polls() -> None:
    """``HostTier.clock`` replaced by one that ticks a second per reading: a wait for a
    copy the engine lost gives up after exactly ``wait_timeout_s`` polls, whatever the
    machine's speed."""
    engine = _CountingEngine()
    cache = TierCache(engine, capacity=16,
                      host=HostTier(capacity=32, wait_timeout_s=7, clock=PollClock()))
    cache.finish(cache.admit(PROMPT))
    engine._pending.clear()  # the engine lost the batch: it is never reported
    before = engine.polls
    with pytest.raises(CopyEngineError, match=r"not completed within 7 s"):
        cache.wait()
    assert engine.polls - before == 7
    assert cache.stats().host.copies_in_flight == 1  # still in flight: nothing freed
    owners_ok(cache)


def test_a_clock_that_is_not_callable_is_refused() -> None:
    with pytest.raises(ConfigError, match="clock must be a callable"):
        HostTier(capacity=32, clock=5.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0, -1.0, True, "1", float("inf"), float("nan")])
def test_a_bad_wait_timeout_is_refused(timeout: Any) -> None:
    with pytest.raises(ConfigError, match="wait_timeout_s"):
        HostTier(capacity=32, wait_timeout_s=timeout)
