"""PNG plots of simulation reports (matplotlib, the ``plot`` extra; imported when drawing).

Every function takes reports from :func:`radixkv.sim.report.summarize` (and TTFT samples
where a distribution is drawn) and writes one PNG."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .records import REASONS

Report = dict[str, Any]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def series_name(report: Report) -> str:
    """What a report's run is apart from its capacity: the line it belongs to."""
    config = report["config"]
    name = f"{'+'.join(config['components'])} {config['policy']} page {config['page_size']}"
    if config["engines"] > 1:
        name += f" {config['engines']}x {config['router']}"
    return name


def hit_rate_vs_capacity(reports: list[Report], path: Path, title: str = "") -> Path:
    """Token hit rate against FULL capacity (log axis), one line per policy/shape, with the
    trace's reuse bound dotted (one line per page size; none for reports without it)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    lines: dict[str, list[Report]] = defaultdict(list)
    for report in reports:
        lines[series_name(report)].append(report)
    for name, group in lines.items():
        group.sort(key=lambda r: r["config"]["capacity"])
        xs = [r["config"]["capacity"] for r in group]
        ax.plot(xs, [100 * r["token_hit_rate"] for r in group], marker="o", label=name)
    _draw_bounds(ax, reports)
    ax.set_xscale("log")
    ax.set_xlabel("device KV capacity (tokens)")
    ax.set_ylabel("prompt tokens served from cache (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title or "hit rate vs capacity")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def _draw_bounds(ax: Any, reports: list[Report]) -> None:
    """The trace's reuse bound of each page size among ``reports``, dotted."""
    bounds = {r["reuse_bound"]["page_size"]: r["reuse_bound"]["token_hit_rate"]
              for r in reports if r.get("reuse_bound") is not None}
    for number, (page, rate) in enumerate(sorted(bounds.items())):
        name = "trace's reuse bound" + (f", page {page}" if len(bounds) > 1 else "")
        ax.axhline(100 * rate, linestyle=":", color="grey", alpha=1.0 - 0.25 * (number % 3),
                   label=f"{name}: {100 * rate:.1f}% (every earlier prefix reused)")


def ttft_cdf(samples: list[tuple[str, list[float]]], path: Path) -> Path:
    """The distribution of time-to-first-token, one curve per run (log time axis)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, values in samples:
        if values:
            ys = [(i + 1) / len(values) for i in range(len(values))]
            ax.step(sorted(values), ys, where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("time to first token (s)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("TTFT CDF")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def memory_over_time(reports: list[Report], path: Path) -> Path:
    """FULL KV slots in use (cached + held by running requests) and held by requests, as a
    share of capacity, for engine 0 of each run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for report in reports:
        engine = report["engines"][0]
        columns = engine["memory"]["columns"]
        rows = engine["memory"]["samples"]
        capacity = engine["pool_capacity"]["full"] or 1
        times = [row[0] for row in rows]
        used = [100 * row[columns.index("full_used")] / capacity for row in rows]
        line = ax.plot(times, used, label=f"{report['label']}: in use")[0]
        held = [100 * row[columns.index("held_by_requests")] / capacity for row in rows]
        ax.plot(times, held, linestyle="--", color=line.get_color(),
                label=f"{report['label']}: held by requests")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("FULL KV slots (% of capacity)")
    ax.set_ylim(0, 105)
    ax.set_title("device memory over time (engine 0)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def losses(reports: list[Report], path: Path) -> Path:
    """Stacked bars: each run's prompt tokens by outcome (hit, and why the rest missed)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(reports) + 2.6))
    labels = [r["label"] for r in reports]
    left = [0.0] * len(reports)
    for name in REASONS:
        shares = [100 * r["losses"][name] / (r["prompt_tokens"] or 1) for r in reports]
        if any(shares):
            ax.barh(labels, shares, left=left, label=name)
            left = [a + b for a, b in zip(left, shares)]
    ax.set_xlabel("prompt tokens (%)")
    ax.set_xlim(0, 100)
    ax.invert_yaxis()
    ax.set_title("where prompt tokens came from, and why hits were lost")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4)
    return _save(fig, path)


def comparison(reports: list[Report], path: Path, title: str) -> Path:
    """Side-by-side bars of token hit rate and TTFT p50/p99 per run (e.g. layer mixes)."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.5 * len(reports) + 2.5))
    labels = [r["label"] for r in reports]
    bars = left.barh(labels, [100 * r["token_hit_rate"] for r in reports], color="tab:blue")
    left.bar_label(bars, fmt="%.1f%%", fontsize=8, padding=2)
    left.set_xlabel("token hit rate (%)")
    left.set_xlim(0, 100)
    left.invert_yaxis()
    for key, color in (("p99", "tab:red"), ("p50", "tab:orange")):
        values = [1000 * (r["ttft_s"][key] or 0.0) for r in reports]
        right.barh(labels, values, color=color, label=f"TTFT {key}")
    right.set_xlabel("time to first token (ms)")
    right.invert_yaxis()
    right.set_yticklabels([])
    right.legend(fontsize=8)
    fig.suptitle(title)
    return _save(fig, path)
