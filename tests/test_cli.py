"""Tests of the radixkv command line (argument handling; the demo itself is tested elsewhere)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from radixkv.cli import main


def test_no_subcommand_prints_help_and_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "usage: radixkv" in err
    assert "demo" in err


def test_unknown_subcommand_prints_help_and_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err
    assert "usage: radixkv" in err


def test_help_returns_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "usage: radixkv" in capsys.readouterr().out


def test_demo_runs_radixkv_demo_main(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_main() -> int:
        calls.append("main")
        return 7

    fake = types.ModuleType("radixkv.demo")
    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "radixkv.demo", fake)
    assert main(["demo"]) == 7
    assert calls == ["main"]


def test_python_dash_m_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "radixkv"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "usage: radixkv" in result.stderr


def test_ctrl_c_during_a_parallel_sweep_stops_it_with_one_line_and_no_worker_left(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    # as a terminal's Ctrl-C: SIGINT to the whole process group, the workers included
    run = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "from radixkv.cli import main; sys.exit(main(sys.argv[1:]))")
    sweep = subprocess.Popen(
        [sys.executable, "-c", run, "sim", "sweep", "--workload", "chat", "--param",
         "sessions=5000", "--capacity", "20K", "50K", "--no-plots", "--jobs", "2",
         "--progress", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert sweep.stdout is not None
    assert "requests" in sweep.stdout.readline()  # the runs start next
    time.sleep(1.0)
    os.killpg(sweep.pid, signal.SIGINT)
    _, err = sweep.communicate(timeout=60)
    assert sweep.returncode == 130
    assert "runs 0/2 done" in err  # the workers were running when it was interrupted
    assert err.strip().endswith("radixkv sim: interrupted") and "Traceback" not in err
    assert not (out / "report.json").exists()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(sweep.pid, 0)  # a worker left in the group?
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("a worker process outlived the interrupted sweep")


@pytest.mark.parametrize("command", [
    ["bench", "ops"], ["bench", "scale"], ["bench", "events"], ["bench", "tiers"],
    ["bench", "storage"], ["bench", "sim"],
])
def test_a_json_file_that_cannot_be_written_is_refused_before_the_run(
        tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main([*command, "--json", f"{blocker}/sub/result.json"]) == 2
    assert f"'{blocker}' is not a directory" in capsys.readouterr().err
    assert main([*command, "--json", str(tmp_path)]) == 2
    assert "is a directory, not a file" in capsys.readouterr().err
    # a directory whose permission bits allow writing, on a file system that takes no files
    assert main([*command, "--json", "/proc/result.json"]) == 2
    assert "cannot write '/proc/result.json': '/proc' takes no new files" in \
        capsys.readouterr().err


def test_a_json_file_s_missing_directories_are_made_when_it_is_written(
        tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "speed.json"
    assert main(["bench", "sim", "--sessions", "2", "--turns", "1", "--rounds", "1",
                 "--json", str(target)]) == 0
    assert target.stat().st_size > 0


@pytest.mark.parametrize(("options", "why"), [
    (["--sample", "0"], "--sample must be >= 1, got 0"),
    (["--skip", "-1"], "--skip must be >= 0, got -1"),
    (["--num-seqs", "0"], "--num-seqs must be >= 1, got 0"),
    (["--page-size", "16", "0"], "--page-size must be >= 1, got 0"),
    (["--json", "/proc/version/x.json"],
     "cannot write '/proc/version/x.json': '/proc/version' is not a directory"),
])
def test_bench_opcodes_refuses_bad_counts_before_counting(
        options: list[str], why: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "opcodes", *options]) == 2
    assert f"radixkv bench opcodes: error: {why}" in capsys.readouterr().err
