"""What the simulator's pictures draw: every run and engine, the tiers, ∞, distinct styles,
human units. Asserted on the matplotlib figures, never on pixels."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from radixkv.sim.cluster import simulate
from radixkv.sim.report import summarize, ttft_values
from radixkv.sim.runs import label
from radixkv.sim.setup import Shape
from radixkv.sim.workloads import make_workload

pytest.importorskip("matplotlib")

from radixkv.sim import plot_memory, plots
from radixkv.sim.plot_style import pyplot

Report = dict[str, Any]
SHAPE = Shape(page_size=4, engines=2, host_capacity=4096)
CAPACITIES = (256, 1024, None)


@pytest.fixture(scope="module")
def runs() -> list[tuple[Report, list[float]]]:
    """Two engines with a host tier each, at two capacities and unbounded."""
    chats = make_workload("chat", sessions=8, turns=3, system_len=64, user_len=32,
                          output_len=16, rate=4.0, seed=1)
    out = []
    for capacity in CAPACITIES:
        result = simulate(chats, SHAPE.config(capacity, chats))
        report = summarize(result, label(SHAPE, capacity, set()), capacity)
        out.append((report, ttft_values(result)))
    return out


@pytest.fixture(scope="module")
def reports(runs: list[tuple[Report, list[float]]]) -> list[Report]:
    return [report for report, _ in runs]


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    yield
    pyplot().close("all")


def _many(reports: list[Report], count: int) -> list[Report]:
    """``count`` reports, each its own label (copies of real ones)."""
    out = []
    for index in range(count):
        report = copy.deepcopy(reports[index % len(reports)])
        report["label"] = f"run {index}"
        out.append(report)
    return out


def _legend(ax_or_fig: Any) -> list[str]:
    legends = ax_or_fig.legends if hasattr(ax_or_fig, "legends") and ax_or_fig.legends else [
        ax_or_fig.get_legend()]
    return [text.get_text() for legend in legends for text in legend.get_texts()]


def test_an_unbounded_run_is_stored_as_none_and_drawn_as_infinity(
        reports: list[Report]) -> None:
    unbounded = reports[-1]
    assert unbounded["config"]["capacity"] is None
    assert unbounded["config"]["capacity_tokens"] > 1024  # every token of the workload
    assert unbounded["label"] == "full ∞ + host 4.096K"
    assert [r["config"]["capacity"] for r in reports[:-1]] == [256, 1024]
    ax = plots.hit_rate_figure(reports).axes[0]
    ticks = [text.get_text() for text in ax.get_xticklabels()]
    assert ticks == ["256", "1.024K", "∞"]
    positions = list(ax.get_xticks())
    assert positions[2] > positions[1] > positions[0]  # ∞ right of every finite capacity


def test_the_hit_rate_picture_splits_device_and_host_and_names_the_host_size(
        reports: list[Report]) -> None:
    fig = plots.hit_rate_figure(reports)
    ax = fig.axes[0]
    texts = _legend(ax)
    assert "full lru page 4 2x round-robin + host 4.096K" in texts
    assert "served from the device (dashed)" in texts
    assert "served from host (shaded)" in texts
    total = next(line for line in ax.get_lines() if line.get_label().startswith("full"))
    device = next(line for line in ax.get_lines() if "device" in line.get_label())
    assert list(total.get_ydata()) == [100 * r["token_hit_rate"] for r in reports]
    assert list(device.get_ydata()) == [100 * r["hit_rate_by_tier"]["device"]
                                        for r in reports]
    assert len(ax.collections) == 1  # the host's part, shaded


def test_a_run_without_lower_tiers_draws_no_tier_split(reports: list[Report]) -> None:
    plain = copy.deepcopy(reports)
    for report in plain:
        report["hit_rate_by_tier"]["host"] = None
        report["config"]["host_capacity"] = None
    ax = plots.hit_rate_figure(plain).axes[0]
    assert not any("served from" in text for text in _legend(ax))
    assert not ax.collections


def test_the_loss_picture_splits_the_hit_by_tier_and_draws_every_run(
        reports: list[Report]) -> None:
    ax = plots.losses_figure(reports).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [r["label"] for r in reports]
    texts = _legend(ax)
    assert texts[:2] == ["hit: device", "hit: host"]
    assert "other_engine" in texts  # round-robin sent turns away from their history
    assert "not_cached_yet" not in texts or any(r["losses"]["not_cached_yet"] for r in reports)
    shares = {text: [bar.get_width() for bar in container]
              for text, container in zip(texts, ax.containers)}
    for index, report in enumerate(reports):
        assert shares["hit: host"][index] == pytest.approx(
            100 * report["hit_rate_by_tier"]["host"])
        assert sum(column[index] for column in shares.values()) == pytest.approx(100)


def test_memory_draws_every_run_and_every_engine_on_small_multiples(
        reports: list[Report]) -> None:
    (fig,) = plot_memory.memory_figures(reports)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == [f"{r['label']} (2 engines)" for r in reports]
    for ax in panels:
        labels = {line.get_label() for line in ax.get_lines()}
        assert labels == {f"engine {e}: {name}" for e in (0, 1) for name in (
            "device FULL", "FULL held by requests", "host FULL")}
    assert {"engine 0", "engine 1", "device FULL in use", "FULL held by requests",
            "host FULL in use"} <= set(_legend(fig))


def test_memory_puts_runs_beyond_a_page_on_further_pages_never_cutting_them(
        reports: list[Report]) -> None:
    many = _many(reports, plot_memory.PANELS_PER_PAGE + 3)
    figures = plot_memory.memory_figures(many)
    assert len(figures) == 2
    titles = [ax.get_title() for fig in figures for ax in fig.axes if ax.get_visible()]
    assert titles == [f"{r['label']} (2 engines)" for r in many]
    assert figures[1]._suptitle.get_text().endswith("(page 2 of 2)")


def test_memory_samples_hold_the_host_pool_in_use(reports: list[Report]) -> None:
    engine = reports[0]["engines"][0]
    columns = engine["memory"]["columns"]
    assert columns[-1] == "host_full_used"
    used = [row[-1] for row in engine["memory"]["samples"]]
    assert max(used) > 0
    assert max(used) <= engine["host"]["components"]["full"]["pool_capacity"]


def test_every_ttft_curve_has_its_own_style_beyond_ten_runs(
        runs: list[tuple[Report, list[float]]]) -> None:
    samples = [(f"run {i}", runs[i % len(runs)][1]) for i in range(25)]
    ax = plots.ttft_figure(samples).axes[0]
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == [label for label, _ in samples]
    looks = {(line.get_color(), line.get_linestyle(), line.get_marker()) for line in lines}
    assert len(looks) == 25
    assert _legend(ax) == [label for label, _ in samples]


def test_time_axes_are_labelled_in_ms_and_s(
        runs: list[tuple[Report, list[float]]], reports: list[Report]) -> None:
    fig = plots.ttft_figure([("a", [0.004, 0.02, 0.3, 2.5])])
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert any(t.endswith(" ms") for t in ticks) and any(t.endswith(" s") for t in ticks)
    assert not any("10^" in t or "e-" in t for t in ticks)
    fig = plots.comparison_figure(reports, "mixes")
    fig.canvas.draw()
    right = [t.get_text() for t in fig.axes[1].get_xticklabels() if t.get_text()]
    assert right[0] == "0" and all(t.endswith(("ms", " s")) for t in right[1:])
