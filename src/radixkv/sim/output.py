"""What ``radixkv sim`` writes into ``--out``: report.json, the pictures of every run
(when matplotlib is installed and ``--no-plots`` is not given) and report.html, which shows
the pictures, the comparison table and the warnings together."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .html_report import Picture, write_html


@dataclass(frozen=True)
class Outputs:
    """The parts of a command's output: ``document`` is report.json (``workload``,
    ``reuse_bound``, ``runs``, ``requests``); ``ttfts`` each run's label and TTFT values;
    ``heading`` the lines the command printed before its runs."""

    document: dict[str, Any]
    ttfts: list[tuple[str, list[float]]]
    heading: list[str]


def write(out: Path, outputs: Outputs, plots: bool) -> list[Path]:
    """Write report.json, the pictures (``plots``) and report.html into ``out``; return
    the files written (and print why there are no pictures where matplotlib is missing).
    The JSON is streamed to the file (no copy of it as one string)."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "report.json").open("w") as file:
        json.dump(outputs.document, file, indent=1)
        file.write("\n")
    notes: list[str] = []
    if not plots:
        notes.append("no pictures: --no-plots was given")
    elif importlib.util.find_spec("matplotlib") is None:
        notes.append("no pictures: matplotlib is not installed (pip install 'radixkv[plot]')")
        print(notes[-1])
        plots = False
    pictures = draw(out, outputs) if plots else []
    page = write_html(out / "report.html", outputs.document, outputs.heading, pictures, notes)
    return [out / "report.json", *(picture.path for picture in pictures), page]


def draw(out: Path, outputs: Outputs) -> list[Picture]:
    """Every picture the runs call for, each with what it shows."""
    from . import plots
    from .plot_memory import memory_over_time

    name, reports = outputs.document["workload"], outputs.document["runs"]
    pictures = []
    if len({r["config"]["capacity"] for r in reports}) > 1:
        pictures.append(Picture(
            plots.hit_rate_vs_capacity(reports, out / "hit_rate.png", name),
            "Token hit rate against device KV capacity, one line per setup; with a host "
            "tier, the device's part dashed and the host's shaded; the trace's reuse bound "
            "dotted."))
    pictures.append(Picture(
        plots.losses(reports, out / "losses.png"),
        "Where each run's prompt tokens came from (the hit, by tier) and why the rest "
        "missed."))
    pictures.append(Picture(plots.ttft_cdf(outputs.ttfts, out / "ttft_cdf.png"),
                            "Time to first token, the distribution of each run."))
    pictures += [Picture(path, "Memory over time: one panel per run, one colour per engine, "
                         "every pool as a share of its size.")
                 for path in memory_over_time(reports, out / "memory.png")]
    if len({tuple(r["config"]["components"]) for r in reports}) > 1:
        pictures.append(Picture(
            plots.comparison(reports, out / "comparison.png", f"{name}: layer mixes"),
            "Hit rate and TTFT of each layer mix."))
    return pictures
