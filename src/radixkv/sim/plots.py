"""PNG pictures of simulation reports (matplotlib, the ``plot`` extra; imported when drawing).

Every ``*_figure`` function takes reports from :func:`radixkv.sim.report.summarize` (and
TTFT samples where a distribution is drawn) and returns the matplotlib figure, every run
on it; the function of the same name without ``_figure`` writes it as one PNG. Memory over
time is :mod:`radixkv.sim.plot_memory`."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from .plot_style import (
    Report,
    capacity_axis,
    capacity_x,
    legend_outside,
    percent_axis,
    pyplot,
    save,
    seconds_axis,
    styles,
    tier_rates,
    tier_sizes,
)
from .records import REASONS
from .units import percent

REASON_COLORS = {"evicted_full": "tab:red", "swa_mamba_missing": "tab:orange",
                 "never_cached": "tab:pink", "other_engine": "tab:purple",
                 "not_cached_yet": "tab:olive", "other_namespace": "tab:brown",
                 "never_seen": "lightgrey", "uncacheable_tail": "dimgrey"}
TIER_COLORS = {"device": "tab:green", "host": "yellowgreen", "L3": "palegreen"}
"""The hit's part on each tier, then why the rest missed."""


def series_name(report: Report) -> str:
    """What a report's run is apart from its capacity: the line it belongs to."""
    config = report["config"]
    name = f"{'+'.join(config['components'])} {config['policy']} page {config['page_size']}"
    if config["engines"] > 1:
        name += f" {config['engines']}x {config['router']}"
    below = tier_sizes(config)
    return f"{name} {below}" if below else name


def hit_rate_figure(reports: list[Report], title: str = "") -> Any:
    """Token hit rate against FULL capacity (log axis, ``∞`` last), one line per
    policy/shape; with tiers below the device, the device's part dashed and each lower
    tier's part shaded; the trace's reuse bound dotted (one line per page size)."""
    fig, ax = pyplot().subplots(figsize=(8, 4.4))
    lines: dict[str, list[Report]] = defaultdict(list)
    for report in reports:
        lines[series_name(report)].append(report)
    capacities = [r["config"]["capacity"] for r in reports]
    finite = [c for c in capacities if c is not None]
    for (name, group), style in zip(lines.items(), styles(len(lines))):
        group.sort(key=lambda r: math.inf if r["config"]["capacity"] is None
                   else r["config"]["capacity"])
        xs = [capacity_x(r["config"]["capacity"], finite) for r in group]
        ax.plot(xs, [100 * r["token_hit_rate"] for r in group], label=name, **style)
        _tier_parts(ax, xs, group, style["color"])
    _draw_bounds(ax, reports)
    capacity_axis(ax, capacities)
    ax.set_xlabel("device KV capacity (tokens)")
    ax.set_ylabel("prompt tokens served from cache (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title or "hit rate vs capacity")
    ax.grid(alpha=0.3)
    legend_outside(ax, len(ax.get_legend_handles_labels()[1]))
    return fig


def _tier_parts(ax: Any, xs: list[float], group: list[Report], color: str) -> None:
    """Below a line of runs with lower tiers: the device's part dashed, and the part each
    lower tier added shaded, labelled once per tier."""
    parts = [tier_rates(r) for r in group]
    if len(parts[0]) < 2:
        return
    named = set(ax.get_legend_handles_labels()[1])
    below = [100 * rates[0][1] for rates in parts]
    ax.plot(xs, below, linestyle="--", color=color, linewidth=1, label=_once(
        "served from the device (dashed)", named))
    for level in range(1, len(parts[0])):
        top = [low + 100 * rates[level][1] for low, rates in zip(below, parts)]
        ax.fill_between(xs, below, top, color=color, alpha=0.15 * (3 - level), label=_once(
            f"served from {parts[0][level][0]} (shaded)", named))
        below = top


def _once(label: str, named: set[str]) -> str:
    """``label`` the first time, then nothing (one legend entry for every line's part)."""
    return "_nolegend_" if label in named else label


def _draw_bounds(ax: Any, reports: list[Report]) -> None:
    """The trace's reuse bound of each page size among ``reports``, dotted."""
    bounds = {r["reuse_bound"]["page_size"]: r["reuse_bound"]["token_hit_rate"]
              for r in reports if r.get("reuse_bound") is not None}
    for number, (page, rate) in enumerate(sorted(bounds.items())):
        name = "trace's reuse bound" + (f", page {page}" if len(bounds) > 1 else "")
        ax.axhline(100 * rate, linestyle=":", color="grey", alpha=1.0 - 0.25 * (number % 3),
                   label=f"{name}: {percent(rate)} (every earlier prefix reused)")


def hit_rate_vs_capacity(reports: list[Report], path: Path, title: str = "") -> Path:
    return save(hit_rate_figure(reports, title), path)


def ttft_figure(samples: list[tuple[str, list[float]]]) -> Any:
    """The distribution of time-to-first-token, one curve per run, each in its own style
    (log time axis in ms and s); a run without a first token is named in the legend."""
    fig, ax = pyplot().subplots(figsize=(8, 4.4))
    for (label, values), style in zip(samples, styles(len(samples))):
        if not values:
            label += " (no first token)"
        ys = [(i + 1) / len(values) for i in range(len(values))]
        ax.step(sorted(values), ys, where="post", label=label, markevery=0.1, markersize=4,
                **style)
    ax.set_xscale("log")
    seconds_axis(ax.xaxis, log=True)
    percent_axis(ax.yaxis)
    ax.set_xlabel("time to first token")
    ax.set_ylabel("requests")
    ax.set_title("TTFT CDF")
    ax.grid(alpha=0.3)
    legend_outside(ax, len(samples))
    return fig


def ttft_cdf(samples: list[tuple[str, list[float]]], path: Path) -> Path:
    return save(ttft_figure(samples), path)


def losses_figure(reports: list[Report]) -> Any:
    """Stacked bars: each run's prompt tokens by outcome, the hit split by the tier that
    served it, then why the rest missed (every reason present in some run)."""
    fig, ax = pyplot().subplots(figsize=(9, 0.45 * len(reports) + 2.4))
    labels = [r["label"] for r in reports]
    left = [0.0] * len(reports)
    for name, shares in _outcomes(reports):
        if any(shares):
            color = TIER_COLORS.get(name.removeprefix("hit: "), REASON_COLORS.get(name))
            ax.barh(labels, shares, left=left, label=name, color=color)
            left = [a + b for a, b in zip(left, shares)]
    ax.set_xlabel("prompt tokens (%)")
    ax.set_xlim(0, 100)
    ax.invert_yaxis()
    ax.set_title("where prompt tokens came from, and why hits were lost")
    legend_outside(ax, len(ax.get_legend_handles_labels()[1]))
    return fig


def _outcomes(reports: list[Report]) -> list[tuple[str, list[float]]]:
    """Each outcome's share (%) of every run's prompt tokens: ``hit: <tier>`` per tier,
    then the other reasons."""
    tiers = {name for r in reports for name, _ in tier_rates(r)}
    split = len(tiers) > 1
    rows = [(f"hit: {name}" if split else "hit",
             [100 * dict(tier_rates(r)).get(name, 0.0) for r in reports])
            for name in ("device", "host", "L3") if name in tiers]
    for name in REASONS[1:]:
        rows.append((name, [100 * r["losses"][name] / (r["prompt_tokens"] or 1)
                            for r in reports]))
    return rows


def losses(reports: list[Report], path: Path) -> Path:
    return save(losses_figure(reports), path)


def comparison_figure(reports: list[Report], title: str) -> Any:
    """Side-by-side bars of token hit rate and TTFT p50/p99 per run (e.g. layer mixes)."""
    fig, (left, right) = pyplot().subplots(1, 2, figsize=(10, 0.5 * len(reports) + 2.5))
    labels = [r["label"] for r in reports]
    bars = left.barh(labels, [100 * r["token_hit_rate"] for r in reports], color="tab:blue")
    left.bar_label(bars, fmt="%.1f%%", fontsize=8, padding=2)
    left.set_xlabel("token hit rate (%)")
    left.set_xlim(0, 100)
    left.invert_yaxis()
    for key, color in (("p99", "tab:red"), ("p50", "tab:orange")):
        values = [r["ttft_s"][key] or 0.0 for r in reports]
        right.barh(labels, values, color=color, label=f"TTFT {key}")
    seconds_axis(right.xaxis)
    right.set_xlabel("time to first token")
    right.invert_yaxis()
    right.set_yticklabels([])
    right.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def comparison(reports: list[Report], path: Path, title: str) -> Path:
    return save(comparison_figure(reports, title), path)
