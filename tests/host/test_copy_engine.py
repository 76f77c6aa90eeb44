"""The copy engine interface's default wait, and NumpyCopyEngine."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from radixkv.errors import ConfigError, InvalidArgumentError
from radixkv.host import Completion, Copy, CopyEngine, Direction, NumpyCopyConfig, NumpyCopyEngine


def _engine(**config: object) -> tuple[NumpyCopyEngine, np.ndarray, np.ndarray]:
    engine = NumpyCopyEngine(NumpyCopyConfig(**config))  # type: ignore[arg-type]
    device = np.arange(16, dtype=np.int64).reshape(8, 2)
    host = np.full((8, 2), -1, dtype=np.int64)
    engine.register("full", "device", device)
    engine.register("full", "host", host)
    return engine, device, host


def _backup(source: list[int], destination: list[int]) -> Copy:
    return Copy("full", Direction.TO_HOST, np.array(source), np.array(destination))


def test_a_batch_completes_at_the_next_poll_by_default() -> None:
    engine, device, host = _engine()
    ticket = engine.submit([_backup([1, 2], [5, 6])])
    assert engine.in_flight == 1 and (host == -1).all()
    assert engine.poll() == [Completion(ticket, True)]
    assert host[[5, 6]].tolist() == device[[1, 2]].tolist()
    assert engine.poll() == [] and engine.in_flight == 0
    assert engine.submitted == 1 and engine.copied_rows == 2


def test_bytes_move_only_when_a_delayed_batch_completes() -> None:
    engine, _, host = _engine(delay_polls=2)
    ticket = engine.submit([_backup([0], [0])])
    assert engine.poll() == [] and engine.poll() == []
    assert (host == -1).all(), "a destination was written before its completion"
    assert engine.poll() == [Completion(ticket, True)]
    assert host[0].tolist() == [0, 1]


def test_a_load_back_copies_host_rows_to_device_rows() -> None:
    engine, device, host = _engine()
    host[3] = [70, 71]
    engine.submit([Copy("full", Direction.TO_DEVICE, np.array([3]), np.array([6]))])
    engine.poll()
    assert device[6].tolist() == [70, 71]


def test_with_a_seed_batches_complete_out_of_order() -> None:
    engine, _, _ = _engine(delay_polls=4, seed=3)
    tickets = [engine.submit([_backup([i], [i])]) for i in range(8)]
    order: list[int] = []
    while engine.in_flight:
        order.extend(c.ticket for c in engine.poll())
    assert sorted(order) == tickets
    assert order != tickets, "a seeded engine completed in submission order"
    again, _, _ = _engine(delay_polls=4, seed=3)
    for i in range(8):
        again.submit([_backup([i], [i])])
    replay: list[int] = []
    while again.in_flight:
        replay.extend(c.ticket for c in again.poll())
    assert replay == order, "the same seed gave another order"


def test_fail_makes_a_pending_batch_fail_without_moving_bytes() -> None:
    engine, _, host = _engine()
    first = engine.submit([_backup([1], [1])])
    second = engine.submit([_backup([2], [2])])
    engine.fail(first)
    assert engine.poll() == [Completion(first, False), Completion(second, True)]
    assert host[1].tolist() == [-1, -1] and host[2].tolist() == [4, 5]


def test_fail_refuses_a_ticket_not_pending() -> None:
    engine, _, _ = _engine()
    ticket = engine.submit([_backup([1], [1])])
    engine.poll()
    with pytest.raises(InvalidArgumentError, match="no pending batch"):
        engine.fail(ticket)
    with pytest.raises(InvalidArgumentError, match="no pending batch"):
        engine.fail(99)


def test_a_failure_rate_of_one_fails_every_batch_and_zero_none() -> None:
    engine, _, host = _engine(failure_rate=1.0, seed=1)
    tickets = [engine.submit([_backup([i], [i])]) for i in range(3)]
    assert engine.poll() == [Completion(t, False) for t in tickets]
    assert (host == -1).all()
    engine, _, _ = _engine(failure_rate=0.0, seed=1)
    tickets = [engine.submit([_backup([i], [i])]) for i in range(3)]
    assert engine.poll() == [Completion(t, True) for t in tickets]


def test_a_failure_rate_fails_about_that_share_of_batches() -> None:
    engine, _, _ = _engine(failure_rate=0.25, seed=7)
    for i in range(400):
        engine.submit([_backup([i % 8], [i % 8])])
    failed = sum(not c.ok for c in engine.poll())
    assert 60 <= failed <= 140, failed


def test_a_copy_with_mismatched_lengths_is_refused_and_not_queued() -> None:
    engine, _, _ = _engine()
    with pytest.raises(InvalidArgumentError, match="2 source rows for 1 destination rows"):
        engine.submit([_backup([1, 2], [1])])
    assert engine.in_flight == 0 and engine.submitted == 0


def test_a_component_without_buffers_completes_as_bookkeeping() -> None:
    engine = NumpyCopyEngine()
    ticket = engine.submit([Copy("swa", Direction.TO_HOST, np.array([1]), np.array([2]))])
    assert engine.poll() == [Completion(ticket, True)]
    assert engine.copied_rows == 0 and engine.buffer("swa", "host") is None


@pytest.mark.parametrize("config", [{"delay_polls": -1}, {"delay_polls": 1.0},
                                    {"delay_polls": True}, {"failure_rate": 1.5},
                                    {"failure_rate": -0.1}])
def test_a_bad_engine_config_is_refused(config: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        NumpyCopyConfig(**config)  # type: ignore[arg-type]


def test_register_refuses_an_unknown_tier_or_a_non_array() -> None:
    engine = NumpyCopyEngine()
    with pytest.raises(InvalidArgumentError, match="tier must be one of"):
        engine.register("full", "nvme", np.zeros(4))
    with pytest.raises(InvalidArgumentError, match="slot axis first"):
        engine.register("full", "host", [1, 2])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="slot axis first"):
        engine.register("full", "host", np.float64(1.0))  # type: ignore[arg-type]


class _Scripted(CopyEngine):
    """An engine whose polls answer from a script (to drive the default wait)."""

    def __init__(self, script: list[list[Completion]]) -> None:
        self.script, self.polls = script, 0

    def submit(self, copies: Sequence[Copy]) -> int:
        return 0

    def poll(self) -> list[Completion]:
        self.polls += 1
        return self.script.pop(0) if self.script else []


def test_the_default_wait_polls_until_every_ticket_completed_and_returns_all_seen() -> None:
    a, b, c = Completion(1, True), Completion(2, False), Completion(3, True)
    engine = _Scripted([[], [c], [], [a], [b], [Completion(4, True)]])
    assert engine.wait([1, 2]) == [c, a, b]
    assert engine.polls == 5
    assert engine.wait([]) == [] and engine.polls == 5
