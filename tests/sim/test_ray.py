"""``radixkv sim sweep --ray``: every run a task on a Ray head of the session's own
(:mod:`tests.sim.ray_head`), reporting what worker processes (``--jobs``) report. Skipped,
with the reason, where Ray is not installed or its head does not start."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from radixkv.cli import main
from radixkv.progress import ProgressBar
from radixkv.sim.parallel import PlannedRun, RunFailed, run_plan
from radixkv.sim.setup import Shape
from radixkv.sim.workloads import make_workload

from .ray_head import LOOPBACK, RayHead, free_port

SWEEP = ["sim", "sweep", "--workload", "chat", "--param", "sessions=6", "turns=3", "user_len=40",
         "--engines", "2", "--router", "round-robin", "kv-aware", "--capacity", "1K", "inf",
         "--no-plots"]


def _need_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (pip install 'radixkv[ray]')")


@pytest.fixture(scope="session")
def ray_head() -> Iterator[str]:
    """The head's address. The driver (this process) takes Ray's loopback settings before
    anything imports Ray; they are put back at the end."""
    _need_ray()
    saved = {name: os.environ.get(name) for name in LOOPBACK}
    os.environ.update(LOOPBACK)
    head = RayHead()
    try:
        why = head.start()
        if why is not None:
            pytest.skip(why)
        yield head.address
    finally:
        head.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _numbers(path: Path) -> dict[str, Any]:
    """report.json less what depends on the machine (wall time, requests per second)."""
    report = json.loads(path.read_text())
    for run in report["runs"]:
        del run["wall_seconds"], run["requests_per_wall_second"]
    return report


def test_a_sweep_on_ray_reports_the_numbers_worker_processes_report(
        ray_head: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SWEEP, "--ray", ray_head, "--progress", "--out", str(tmp_path / "ray")]) == 0
    captured = capsys.readouterr()
    assert "4 runs in" in captured.out
    assert f"(as tasks on the Ray cluster at {ray_head})" in captured.out
    assert "Ray tasks" in captured.err and "4/4 runs" in captured.err
    assert main([*SWEEP, "--jobs", "2", "--out", str(tmp_path / "local")]) == 0
    on_ray = _numbers(tmp_path / "ray" / "report.json")
    assert [run["label"] for run in on_ray["runs"]] == [
        "full round-robin 1K", "full round-robin ∞", "full kv-aware 1K", "full kv-aware ∞"]
    assert all(len(rows) == 18 for rows in on_ray["requests"].values())
    assert on_ray == _numbers(tmp_path / "local" / "report.json")
    # negative control: the comparison sees a change of the workload's seed
    assert main([*SWEEP, "--seed", "1", "--jobs", "2", "--out", str(tmp_path / "seed1")]) == 0
    assert on_ray != _numbers(tmp_path / "seed1" / "report.json")


def test_a_run_that_fails_on_ray_is_named_and_ends_the_sweep(ray_head: str) -> None:
    requests = make_workload("chat", sessions=2, turns=2)
    plan = [PlannedRun(Shape(), 4_000, "good"), PlannedRun(Shape(preset="nope"), 4_000, "bad"),
            PlannedRun(Shape(), None, "never reached")]
    outputs = run_plan(requests, plan, 1, ProgressBar(False), ray=ray_head)
    run, first = next(outputs)
    assert run.label == "good" and first.report["requests"] == 4
    with pytest.raises(RunFailed, match=r"run 'bad' failed on Ray: unknown preset 'nope'"):
        next(outputs)


def test_an_address_where_no_cluster_answers_fails_before_any_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _need_ray()
    address = f"127.0.0.1:{free_port()}"  # bound a moment ago, closed: nothing listens
    assert main([*SWEEP, "--ray", address, "--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert f"radixkv sim: error: no Ray cluster answers at {address}:" in captured.err
    assert "== " not in captured.out and not (tmp_path / "report.json").exists()


@pytest.mark.parametrize(("options", "why"), [
    (["--ray", "localhost"], "a Ray address is HOST:PORT"),
    (["--ray", "localhost:0"], "a Ray address is HOST:PORT"),
    (["--ray", ":6379"], "a Ray address is HOST:PORT"),
    (["--ray", "127.0.0.1:6379", "--jobs", "2"], "not allowed with argument"),
])
def test_a_malformed_ray_option_is_refused_as_the_options_are_parsed(
        capsys: pytest.CaptureFixture[str], options: list[str], why: str) -> None:
    assert main([*SWEEP, *options]) == 2
    assert why in capsys.readouterr().err


def test_without_ray_installed_the_sweep_says_how_to_get_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "radixkv.sim.ray_runs", raising=False)
    assert main([*SWEEP, "--ray", "127.0.0.1:6379", "--out", str(tmp_path)]) == 1
    assert "--ray needs Ray on this machine" in capsys.readouterr().err
