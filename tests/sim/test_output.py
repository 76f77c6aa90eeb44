"""What ``radixkv sim`` writes: report.json, every picture, and report.html with the
pictures, the comparison table and the warnings; and a sweep in one process holds one
run's cache at a time."""

from __future__ import annotations

import copy
import gc
import json
import re
from pathlib import Path

import pytest

from radixkv.cli import main
from radixkv.progress import ProgressBar
from radixkv.sim.output import Outputs, write
from radixkv.sim.parallel import PlannedRun, run_plan
from radixkv.sim.setup import Shape
from radixkv.sim.workloads import make_workload

SWEEP = ["sim", "sweep", "--workload", "system", "--param", "groups=2", "prompts=6", "rate=0",
         "--capacity", "64", "2K", "inf", "--host-capacity", "4K", "--engines", "2",
         "--jobs", "1"]
"""Three runs on two engines with a host tier: one rejects every request (64 tokens hold
no prompt), one queues (every request arrives at once), one unbounded."""


def _images(page: str) -> list[str]:
    return re.findall(r'<img src="([^"]+)"', page)


def _cells(page: str) -> list[str]:
    return re.findall(r"<td>([^<]*)</td>", page)


def test_report_html_shows_every_picture_the_table_and_the_warnings(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert main([*SWEEP, "--out", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    pictures = sorted(path.name for path in tmp_path.glob("*.png"))
    assert sorted(_images(page)) == pictures
    assert {"hit_rate.png", "losses.png", "ttft_cdf.png", "memory.png"} <= set(pictures)
    runs = json.loads((tmp_path / "report.json").read_text())["runs"]
    cells = _cells(page)
    assert [r["label"] for r in runs] == ["full 64 + host 4K", "full 2K + host 4K",
                                          "full ∞ + host 4K"]
    for run in runs:
        assert run["label"] in cells
        if run["load"]["warning"] is not None:
            assert f"<li>{run['label']}: {run['load']['warning']}</li>" in page
    assert any(run["load"]["warning"] for run in runs)
    assert "<li>full 64 + host 4K: 12 requests rejected" in page
    assert page.count("<details>") == 3


def test_without_pictures_report_html_says_why_and_shows_none(tmp_path: Path) -> None:
    assert main([*SWEEP, "--no-plots", "--out", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<li>no pictures: --no-plots was given</li>" in page
    assert not _images(page) and not list(tmp_path.glob("*.png"))
    assert "full ∞ + host 4K" in _cells(page)


def test_every_memory_page_is_written_and_shown(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from radixkv.sim.plot_memory import PANELS_PER_PAGE

    assert main([*SWEEP, "--no-plots", "--out", str(tmp_path / "first")]) == 0
    document = json.loads((tmp_path / "first" / "report.json").read_text())
    runs = []
    for index in range(PANELS_PER_PAGE + 2):
        run = copy.deepcopy(document["runs"][index % 3])
        run["label"] = f"run {index}"
        runs.append(run)
    document["runs"] = runs
    ttfts = [(run["label"], [0.1, 0.2]) for run in runs]
    written = write(tmp_path / "many", Outputs(document, ttfts, ["many runs"]), plots=True)
    names = [path.name for path in written]
    assert "memory.png" in names and "memory-2.png" in names
    page = (tmp_path / "many" / "report.html").read_text(encoding="utf-8")
    assert {"memory.png", "memory-2.png"} <= set(_images(page))
    assert _cells(page)[:: len(_cells(page)) // len(runs)] == [r["label"] for r in runs]


def test_a_sweep_in_one_process_frees_each_runs_cache_before_the_next() -> None:
    requests = make_workload("chat", sessions=6, turns=2, user_len=40, seed=2)
    plan = [PlannedRun(Shape(host_capacity=4_000), capacity, f"run {capacity}")
            for capacity in (2_000, 8_000)]
    # the tree's nodes form cycles: only a collection frees a run's cache, and in a large
    # process a full one may not come for many runs (here: never, unless one is made)
    garbage: list[int] = []
    gc.collect()
    gc.disable()
    try:
        for _run, _output in run_plan(requests, plan, 1, ProgressBar(False)):
            garbage.append(gc.collect())  # what the run left for a collection to free
    finally:
        gc.enable()
    assert garbage == [0, 0]
