"""Memory over time as small multiples: one panel per run, every engine of the run on it
(a colour each), every pool its samples hold (device FULL, SWA and MAMBA, FULL held by
running requests, and the host tier's pools) as a share of that pool. Runs beyond one
page's panels go on further pages, never left out."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .plot_style import COLORS, Report, pyplot, save, seconds_axis

PANELS_PER_PAGE = 16
COLUMNS = 4

DEVICE_DASHES = {"full": "-", "swa": "-.", "mamba": (0, (3, 1, 1, 1, 1, 1))}
HOST_DASH = ":"


def memory_figures(reports: list[Report]) -> list[Any]:
    """One figure per :data:`PANELS_PER_PAGE` runs, one panel per run, in report order."""
    pages = [reports[start : start + PANELS_PER_PAGE]
             for start in range(0, len(reports), PANELS_PER_PAGE)]
    return [_page(page, number, len(pages)) for number, page in enumerate(pages, 1)]


def memory_over_time(reports: list[Report], path: Path) -> list[Path]:
    """Write :func:`memory_figures`: the first page at ``path``, page n at
    ``<stem>-<n><suffix>``."""
    written = []
    for number, fig in enumerate(memory_figures(reports), 1):
        target = path if number == 1 else path.with_name(f"{path.stem}-{number}{path.suffix}")
        written.append(save(fig, target))
    return written


def _page(reports: list[Report], number: int, pages: int) -> Any:
    columns = min(COLUMNS, len(reports))
    rows = math.ceil(len(reports) / columns)
    fig, axes = pyplot().subplots(rows, columns, figsize=(3.6 * columns, 2.5 * rows + 0.8),
                                  sharey=True, squeeze=False)
    kinds: dict[str, Any] = {}
    for ax, report in zip(axes.flat, reports):
        kinds.update(_panel(ax, report))
    for ax in axes.flat[len(reports):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("% of the pool")
    engines = max(len(r["engines"]) for r in reports)
    title = "memory over time, every run and engine"
    fig.suptitle(title + (f" (page {number} of {pages})" if pages > 1 else ""))
    height = fig.get_figheight()
    fig.legend(handles=_legend(kinds, engines), loc="lower center", ncol=4, fontsize=8,
               bbox_to_anchor=(0.5, 0.0), frameon=False)
    fig.tight_layout(rect=(0, 0.6 / height, 1, 1))  # room for the legend: 0.6 inch
    return fig


def _panel(ax: Any, report: Report) -> dict[str, Any]:
    """Draw one run's engines; return what each drawn series is (its legend entry's
    style)."""
    drawn: dict[str, Any] = {}
    for index, engine in enumerate(report["engines"]):
        color = COLORS[index % len(COLORS)]
        columns = engine["memory"]["columns"]
        rows = engine["memory"]["samples"]
        times = [row[0] for row in rows]
        for column, (name, dash, capacity) in _series(engine).items():
            position = columns.index(column)
            shares = [100 * row[position] / (capacity or 1) for row in rows]
            ax.plot(times, shares, color=color, linestyle=dash, linewidth=1.2,
                    label=f"engine {index}: {name}")
            drawn[name] = dash
    engines = len(report["engines"])
    ax.set_title(report["label"] + (f" ({engines} engines)" if engines > 1 else ""),
                 fontsize=8)
    ax.set_ylim(0, 105)
    end = max((row[0] for e in report["engines"] for row in e["memory"]["samples"]),
              default=0.0)
    ax.set_xlim(0, end or 1.0)
    ax.tick_params(labelsize=7)
    seconds_axis(ax.xaxis)
    ax.grid(alpha=0.3)
    if not any(engine["memory"]["samples"] for engine in report["engines"]):
        ax.text(0.5, 0.5, "no samples", ha="center", transform=ax.transAxes)
    return drawn


def _series(engine: dict[str, Any]) -> dict[str, tuple[str, Any, int]]:
    """The columns of an engine's samples drawn: name, dash and pool size of each."""
    pools = engine["pool_capacity"]
    host = engine.get("host") or {"components": {}}
    found: dict[str, tuple[str, Any, int]] = {}
    for column in engine["memory"]["columns"][1:]:
        kind = column.removesuffix("_used")
        if column == "held_by_requests":
            found[column] = ("FULL held by requests", "--", pools["full"])
        elif kind.startswith("host_"):
            pool = host["components"][kind.removeprefix("host_")]["pool_capacity"]
            found[column] = (f"host {kind.removeprefix('host_').upper()}", HOST_DASH, pool)
        else:
            found[column] = (f"device {kind.upper()}", DEVICE_DASHES.get(kind, "-"),
                             pools[kind])
    return found


def _legend(kinds: dict[str, Any], engines: int) -> list[Any]:
    """Engines by colour, pools by dash."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=COLORS[i % len(COLORS)], linewidth=3,
                      label=f"engine {i}") for i in range(engines)] if engines > 1 else []
    handles += [Line2D([], [], color="black", linestyle=dash, label=f"{name} in use"
                       if "held" not in name else name) for name, dash in kinds.items()]
    return handles
