"""Overload is reported (issue #34, item 1): offered load against what the engines served,
the simulated span against the trace's, TTFT split into queueing and service, and a warning
when the engines cannot keep up. UNIT_COST makes every step one second."""

from __future__ import annotations

import pytest

from radixkv.sim.report import summarize
from radixkv.sim.summary import render

from .support import request, run, tokens


def _six(spacing: float) -> dict[str, object]:
    # six 8-token prompts, nothing shared, one output token each: one step (1 s) apiece,
    # and one request at a time
    workload = [request(rid, spacing * rid, tokens(100 * rid, 8)) for rid in range(6)]
    return summarize(run(workload, max_running=1))


def test_arrivals_faster_than_service_are_reported_as_overload() -> None:
    # arrivals every 0.5 s over 2.5 s; each request is admitted when the one before ends
    # (0, 1, ..., 5 s), so they queue 0, 0.5, ..., 2.5 s (7.5 s in all) and are served in
    # 1 s each (6 s); the last finishes at 6 s: 2.4 times the trace's span
    report = _six(0.5)
    load = dict(report["load"])
    assert load["ttft_queue_s"]["mean"] == pytest.approx(1.25)
    assert load["ttft_service_s"] == {"p50": 1.0, "p90": 1.0, "p99": 1.0, "mean": 1.0}
    del load["ttft_queue_s"], load["ttft_service_s"]
    assert load == {
        "trace_span_s": 2.5, "simulated_span_s": 6.0, "stretch": 2.4,
        "offered_tokens_per_s": 54 / 2.5, "capacity_tokens_per_s": 9.0,
        "offered_load": pytest.approx(2.4), "busy_fraction": 1.0,
        "ttft_queue_share": 7.5 / 13.5, "queueing_dominates": True, "overloaded": True,
        "warning": "overloaded, the engines cannot keep up: they took 2.40x the trace's span "
                   "(6.0 s for 2.5 s) and queueing is 56% of TTFT"}
    assert "WARNING: overloaded, the engines cannot keep up" in render(report)


def test_arrivals_the_engine_keeps_up_with_raise_no_warning() -> None:
    # every 2 s: each request runs alone at once, 1 s; the last ends at 11 s
    report = _six(2.0)
    load = report["load"]
    assert (load["stretch"], load["offered_load"], load["busy_fraction"]) == (
        1.1, pytest.approx(0.6), pytest.approx(6 / 11))
    assert (load["ttft_queue_share"], load["overloaded"], load["warning"]) == (0.0, False, None)
    assert "WARNING" not in render(report)


def test_a_burst_is_queueing_not_overload() -> None:
    # all six at once: the trace has no span to fall behind, but five of them queue
    # (1 + 2 + 3 + 4 + 5 = 15 s against 6 s of service)
    load = _six(0.0)["load"]
    assert (load["trace_span_s"], load["stretch"], load["offered_load"]) == (0.0, None, None)
    assert load["ttft_queue_share"] == 15 / 21 and load["queueing_dominates"]
    assert not load["overloaded"]
    assert load["warning"] == ("queueing is 71% of TTFT: arrivals come in bursts the engines "
                               "work off later")
