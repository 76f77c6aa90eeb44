"""Reports, the terminal summary and the plots of a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radixkv.sim.records import REASONS, partition
from radixkv.sim.report import summarize, ttft_values
from radixkv.sim.summary import render, render_table
from radixkv.sim.workloads import make_workload

from .support import run

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def reports() -> list[tuple[dict[str, object], list[float]]]:
    chats = make_workload("chat", sessions=8, turns=3, system_len=64, user_len=32,
                          output_len=16, rate=4.0, seed=1)
    out = []
    for capacity in (256, 4096):
        result = run(chats, capacity=capacity, page_size=4)
        out.append((summarize(result), ttft_values(result)))
    return out


def test_the_report_adds_up_and_is_json(reports: list) -> None:  # type: ignore[type-arg]
    for report, _ in reports:
        json.dumps(report)
        assert sum(report["losses"].values()) == report["prompt_tokens"]
        assert report["hit_tokens"] == report["losses"]["hit"]
        assert report["hit_tokens"] == report["engines"][0]["cache"]["hit_tokens"] or (
            report["preempted"])
        assert report["token_hit_rate"] <= report["ideal_hit_rate"]
        assert report["ttft_s"]["p50"] <= report["ttft_s"]["p99"]
        assert sum(report["hit_length_histogram"].values()) == report["requests"]
    small, large = (report for report, _ in reports)
    assert small["token_hit_rate"] < large["token_hit_rate"]
    assert small["losses"]["evicted_full"] > 0 == large["losses"]["evicted_full"]
    assert sum(small["engines"][0]["evictions"]["full"].values()) > 0


def test_the_summary_names_every_outcome_present(reports: list) -> None:  # type: ignore[type-arg]
    report = reports[0][0]
    text = render(report)
    assert "token hit rate" in text and "TTFT" in text
    for name in REASONS:
        assert (name in text) == bool(report["losses"][name])
    table = render_table([r for r, _ in reports])
    assert len(table.splitlines()) == 4


def test_plots_are_written_as_png(reports: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    pytest.importorskip("matplotlib")
    from radixkv.sim import plot_memory, plots

    only = [r for r, _ in reports]
    paths = [
        plots.hit_rate_vs_capacity(only, tmp_path / "hit.png"),
        plots.ttft_cdf([(r["label"], t) for r, t in reports], tmp_path / "ttft.png"),
        *plot_memory.memory_over_time(only, tmp_path / "memory.png"),
        plots.losses(only, tmp_path / "losses.png"),
        plots.comparison(only, tmp_path / "cmp.png", "two capacities"),
    ]
    for path in paths:
        assert path.read_bytes()[:8] == PNG


def test_a_partition_lists_every_reason_in_order_and_adds_up() -> None:
    # page 4, 30 prompt tokens: 28 cacheable; hit 8, resident 12, held 16, computed 16 (here),
    # 20 (any engine), seen 24 (this namespace), 24 (any)
    parts = partition(30, 4, 8, (12, 16, 16, 20, 24, 24))
    assert list(parts) == list(REASONS)
    assert parts == {"hit": 8, "evicted_full": 4, "swa_mamba_missing": 4, "never_cached": 0,
                     "other_engine": 4, "not_cached_yet": 4, "other_namespace": 0,
                     "never_seen": 4, "uncacheable_tail": 2}
    # unknown residency: the whole stretch to what the cache held once counts as evicted;
    # bounds beyond the cacheable part are capped
    assert partition(30, 4, 8, (None, 4, 40, 0, 0, 0)) == {
        "hit": 8, "evicted_full": 0, "swa_mamba_missing": 0, "never_cached": 20,
        "other_engine": 0, "not_cached_yet": 0, "other_namespace": 0, "never_seen": 0,
        "uncacheable_tail": 2}
