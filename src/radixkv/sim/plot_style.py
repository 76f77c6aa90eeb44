"""What the simulator's pictures share: matplotlib (the ``plot`` extra, imported when
drawing), saving, a distinct style per run however many there are, the capacity axis with
``∞`` drawn as such, and axis labels in human units."""

from __future__ import annotations

import math
from itertools import product
from pathlib import Path
from typing import Any

from .units import INFINITY, seconds_tick, tokens

Report = dict[str, Any]

COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
          "tab:pink", "tab:gray", "tab:olive", "tab:cyan")
DASHES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
TIERS = {"device": "device", "host": "host", "storage": "L3"}
"""The tiers of ``hit_rate_by_tier`` in order down the hierarchy, and their names."""

INFINITY_GAP = 3.0
"""Where ``∞`` sits on a log capacity axis: this factor right of the largest finite one."""


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: Path) -> Path:
    """Write ``fig`` as a PNG and free it."""
    fig.savefig(path, dpi=100, bbox_inches="tight")
    pyplot().close(fig)
    return path


def styles(count: int) -> list[dict[str, Any]]:
    """``count`` line styles, each run its own: colour first, then dash, then marker, so
    the first 10 differ by colour and the first 280 in some way (then they repeat)."""
    combos = [{"color": color, "linestyle": dash, "marker": marker}
              for marker, dash, color in product(MARKERS, DASHES, COLORS)]
    return [combos[index % len(combos)] for index in range(count)]


def capacity_x(capacity: int | None, finite: list[int]) -> float:
    """Where ``capacity`` (``None``: unbounded) sits on a log axis of the ``finite`` ones."""
    if capacity is not None:
        return float(capacity)
    return INFINITY_GAP * max(finite, default=1)


def capacity_axis(ax: Any, capacities: list[int | None]) -> None:
    """A log x axis ticked at exactly the capacities run, in one notation, ``∞`` last."""
    finite = sorted({c for c in capacities if c is not None})
    ticks = [capacity_x(c, finite) for c in finite]
    labels = [tokens(c) for c in finite]
    if any(c is None for c in capacities):
        ticks.append(capacity_x(None, finite))
        labels.append(INFINITY)
    ax.set_xscale("log")
    ax.set_xticks(ticks, labels)
    ax.minorticks_off()
    if len(ticks) == 1:
        ax.set_xlim(ticks[0] / 2, ticks[0] * 2)


def seconds_axis(axis: Any, log: bool = False) -> None:
    """Tick labels of a time axis in ms below a second, s above it; on a ``log`` axis
    ticks at 1, 2 and 5 of each decade, none unlabelled in between."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if log:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_minor_formatter(NullFormatter())
    axis.set_major_formatter(FuncFormatter(lambda value, _: seconds_tick(value)))


def percent_axis(axis: Any) -> None:
    """Tick labels of an axis of shares (0 to 1) as percentages."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{100 * value:.0f}%"))


def tier_sizes(config: dict[str, Any]) -> str:
    """The tiers under the device, with their sizes (``+ host 1.5M``); empty without."""
    parts = [f"+ {name} {tokens(config[f'{tier}_capacity'])}"
             for tier, name in list(TIERS.items())[1:]
             if config.get(f"{tier}_capacity") is not None]
    return " ".join(parts)


def tier_rates(report: Report) -> list[tuple[str, float]]:
    """The run's hit rate by tier, the tiers it has, in order down the hierarchy."""
    rates = report["hit_rate_by_tier"]
    return [(name, float(rates[tier])) for tier, name in TIERS.items()
            if rates.get(tier) is not None]


def legend_outside(ax: Any, entries: int) -> None:
    """A legend right of the axes, in as many columns as it needs to stay readable."""
    if entries:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  ncol=max(1, math.ceil(entries / 24)), frameon=False)

