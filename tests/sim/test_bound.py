"""The trace's reuse bound (issue #34, item 3): computed from the trace alone, per trace and
per namespace, and drawn as hit_rate.png's reference line."""

from __future__ import annotations

from typing import Any

import numpy as np

from radixkv.sim import plots
from radixkv.sim.bound import allowed_hits, reuse_bound

from .support import request, tokens

A, B, C, D = tokens(0, 16), tokens(100, 8), tokens(200, 8), tokens(300, 4)


def _workload() -> list[Any]:
    first = request(0, 0.0, A, output=5)  # its answer's first 4 tokens are fed back: cached
    return [first,
            request(1, 1.0, np.concatenate((A, B))),
            request(2, 2.0, np.concatenate((A[:8], C)), namespace=("tenant-a", None)),
            request(3, 3.0, A, namespace=("tenant-a", None)),
            request(4, 4.0, np.concatenate((A, first.output[:4], D)))]


def test_each_request_may_reuse_the_longest_earlier_prefix_of_its_namespace() -> None:
    # pages of 4; a prompt of n tokens reuses at most the whole pages of its first n - 1.
    # r1: A (16) from r0. r2: first of tenant-a. r3: A[:8] from r2 (tenant-a). r4: A and
    # r0's 4 fed answer tokens: 20 tokens, all of its first 23 that make whole pages
    assert allowed_hits(_workload(), 4) == [0, 16, 0, 8, 20]


def test_the_bound_is_summed_per_trace_and_per_namespace() -> None:
    bound = reuse_bound(_workload(), 4)
    assert bound == {
        "page_size": 4, "token_hit_rate": 44 / 96, "reusable_tokens": 44, "prompt_tokens": 96,
        "by_namespace": {
            "default": {"token_hit_rate": 36 / 64, "reusable_tokens": 36, "prompt_tokens": 64},
            "tenant-a": {"token_hit_rate": 8 / 32, "reusable_tokens": 8, "prompt_tokens": 32}}}
    # pages of 16: only r1 and r4 reuse A; r3's 8 shared tokens are no whole page
    assert reuse_bound(_workload(), 16)["reusable_tokens"] == 32


def _report(capacity: int, rate: float, page: int, bound: float | None) -> dict[str, Any]:
    config = {"components": ["full"], "policy": "lru", "page_size": page, "engines": 1,
              "router": "round-robin", "capacity": capacity}
    report: dict[str, Any] = {"config": config, "token_hit_rate": rate,
                              "ideal_hit_rate": 0.9, "hit_rate_by_tier": {
                                  "device": rate, "host": None, "storage": None}}
    if bound is not None:
        report["reuse_bound"] = {"page_size": page, "token_hit_rate": bound}
    return report


def test_hit_rate_plot_draws_the_trace_s_bound_not_a_run_s_estimate() -> None:
    reports = [_report(1000, 0.2, 16, 0.65), _report(5000, 0.6, 16, 0.65),
               _report(1000, 0.25, 1, 0.7), _report(5000, 0.62, 1, 0.7)]
    ax = plots.hit_rate_figure(reports).axes[0]
    flat = {line.get_label(): line.get_ydata()[0] for line in ax.lines
            if line.get_linestyle() == ":"}
    assert flat == {"trace's reuse bound, page 1: 70.0% (every earlier prefix reused)": 70.0,
                    "trace's reuse bound, page 16: 65.0% (every earlier prefix reused)": 65.0}
    # reports without a bound (summaries made by hand): no reference line
    fig = plots.hit_rate_figure([_report(1000, 0.2, 16, None), _report(9, 0.1, 16, None)])
    assert not [line for line in fig.axes[0].lines if line.get_linestyle() == ":"]
