"""``radixkv sim run | replay | sweep`` end to end on small inputs."""

from __future__ import annotations

import json
import multiprocessing
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest

from radixkv.cli import main
from radixkv.sim.setup import parse_capacity


def test_capacities_parse_with_units_and_inf() -> None:
    assert parse_capacity("1M") == 1_000_000
    assert parse_capacity("2.5K") == 2500
    assert parse_capacity("300") == 300
    assert parse_capacity("inf") is None
    for bad in ("0", "abc", "2.5", "1e400", "-1K", "nanM"):
        with pytest.raises(ValueError, match="capacity must be a positive whole number"):
            parse_capacity(bad)


def test_sim_run_prints_a_summary_and_writes_report_and_plots(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "run", "--workload", "chat", "--param", "sessions=4", "turns=2",
                 "user_len=64", "output_len=8", "--capacity", "1M", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "token hit rate" in out and "== full 1M ==" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["runs"][0]["requests"] == 8
    for name in ("ttft_cdf.png", "memory.png", "losses.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_sim_replay_runs_each_capacity_of_a_mooncake_style_trace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(
        {"timestamp": 100 * i, "input_length": 1200, "output_length": 4,
         "hash_ids": [0, i % 3, 10 + i]}) + "\n" for i in range(12)))
    code = main(["sim", "replay", str(trace), "--capacity", "2K", "inf", "--out",
                 str(tmp_path / "out")])
    assert code == 0
    out = capsys.readouterr().out
    assert "12 requests" in out and "hit rate" in out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    runs = report["runs"]
    assert [r["label"] for r in runs] == ["full 2K", "full ∞"]
    assert [r["config"]["capacity"] for r in runs] == [2_000, None]
    assert runs[0]["token_hit_rate"] <= runs[1]["token_hit_rate"]
    # the trace's bound: r1 and r2 reuse block 0 (512 tokens), r3..r11 blocks 0 and i % 3
    # (1,024), of 12 × 1,200 prompt tokens; the unbounded run, 100 ms apart, reaches it
    bound = {"page_size": 16, "token_hit_rate": 10_240 / 14_400, "reusable_tokens": 10_240,
             "prompt_tokens": 14_400}
    bound["by_namespace"] = {"default": {k: v for k, v in bound.items() if k != "page_size"}}
    assert report["reuse_bound"] == [bound] and runs[1]["reuse_bound"] == bound
    assert runs[1]["token_hit_rate"] == bound["token_hit_rate"]
    assert "trace's reuse bound at page 16: 71.1% of prompt tokens (10,240 of 14,400" in out
    assert (tmp_path / "out" / "hit_rate.png").stat().st_size > 0


def test_sim_sweep_crosses_policies_and_page_sizes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "sweep", "--workload", "system", "--param", "groups=2", "prompts=3",
                 "--capacity", "2K", "8K", "--policy", "lru", "fifo", "--page-size", "1", "16",
                 "--no-plots", "--progress", "--jobs", "1", "--out", str(tmp_path)])
    assert code == 0
    captured = capsys.readouterr()
    runs = json.loads((tmp_path / "report.json").read_text())["runs"]
    assert len(runs) == 8
    assert "run 8/8" in captured.err  # the progress bar
    assert "fifo p16 8K" in captured.out
    assert "8 runs in" in captured.out and "(1 at a time)" in captured.out


def _report_without_timing(path: Path) -> dict[str, Any]:
    """report.json less what depends on the machine (wall time, requests per second)."""
    report = json.loads(path.read_text())
    for run in report["runs"]:
        del run["wall_seconds"], run["requests_per_wall_second"]
    return report


@pytest.mark.parametrize(("trace", "other_thread"), [(False, False), (True, False), (False, True)])
def test_a_sweep_in_worker_processes_reports_what_one_process_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        trace: bool, other_thread: bool) -> None:
    source = ["--workload", "chat", "--param", "sessions=6", "turns=3", "user_len=40"]
    if trace:
        path = tmp_path / "trace.jsonl"
        path.write_text("".join(json.dumps(
            {"timestamp": 50 * i, "input_length": 700, "output_length": 3,
             "hash_ids": [0, i % 4, 20 + i]}) + "\n" for i in range(15)))
        source = ["--trace", str(path)]
    args = ["sim", "sweep", *source, "--capacity", "1K", "4K", "inf",
            "--policy", "lru", "fifo", "--no-plots"]
    methods: list[str | None] = []
    real = multiprocessing.get_context
    monkeypatch.setattr(multiprocessing, "get_context",
                        lambda method=None: methods.append(method) or real(method))
    outputs = {}
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    if other_thread:  # a fork would copy no thread but this one: workers are spawned
        thread.start()
    try:
        for jobs in ("1", "3"):
            out = tmp_path / f"jobs{jobs}"
            assert main([*args, "--jobs", jobs, "--out", str(out)]) == 0
            outputs[jobs] = capsys.readouterr().out
            assert "6 runs in" in outputs[jobs] and f"({jobs} at a time)" in outputs[jobs]
    finally:
        stop.set()
    if other_thread or "fork" not in multiprocessing.get_all_start_methods():
        assert methods == ["spawn"]
    elif threading.active_count() == 1:
        assert methods == ["fork"]
    assert _report_without_timing(tmp_path / "jobs1" / "report.json") == \
        _report_without_timing(tmp_path / "jobs3" / "report.json")
    labels = [line for line in outputs["3"].splitlines() if line.startswith("== ")]
    assert labels == [line for line in outputs["1"].splitlines() if line.startswith("== ")]
    assert len(labels) == 6


def test_the_progress_bar_of_worker_processes_counts_every_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "sweep", "--workload", "system", "--param", "groups=2", "prompts=3",
                 "--capacity", "2K", "8K", "--no-plots", "--progress", "--jobs", "2",
                 "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "runs 2/2 done" in err and "12/12 requests" in err


def test_a_run_that_fails_in_a_worker_fails_the_command_cleanly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from radixkv.sim import parallel

    real = parallel.simulate

    def simulate(requests: Any, config: Any, progress: Any) -> Any:
        if config.engine.cache.capacity == 8_000:
            raise ValueError("no room for this run")
        return real(requests, config, progress)

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        pytest.skip("the pool would spawn its workers: they would not see the patch")
    monkeypatch.setattr(parallel, "simulate", simulate)
    code = main(["sim", "sweep", "--workload", "system", "--param", "groups=2", "prompts=3",
                 "--capacity", "2K", "8K", "--no-plots", "--jobs", "2", "--progress",
                 "--out", str(tmp_path)])
    assert code == 1
    err = capsys.readouterr().err
    assert "\nradixkv sim: error: no room for this run" in err
    assert not (tmp_path / "report.json").exists()


def test_bad_workload_parameters_fail_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "run", "--param", "nonsense=1", "--no-plots"]) == 1
    assert "no parameter" in capsys.readouterr().err
    assert main(["sim", "run", "--param", "sessions=2.5", "--no-plots"]) == 1
    assert "sessions must be an int >= 1, got 2.5" in capsys.readouterr().err


@pytest.mark.parametrize(("options", "why"), [
    (["--preset", "nope"], "unknown preset 'nope'; choose from 8b-h100"),
    (["--policy", "lru", "nope"], "unknown eviction policy 'nope'"),  # the second setup
    (["--trace", "TRACE", "--time-scale", "0"], "time_scale must be a finite number > 0"),
    (["--out", "FILE/sub"], "Not a directory"),
])
def test_a_bad_setup_fails_before_any_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          options: list[str], why: str) -> None:
    trace, blocker = tmp_path / "t.jsonl", tmp_path / "file"
    trace.write_text(json.dumps({"tokens": [1, 2, 3]}) + "\n")
    blocker.write_text("")
    options = [o.replace("TRACE", str(trace)).replace("FILE", str(blocker)) for o in options]
    out = [] if "--out" in options else ["--out", str(tmp_path / "out")]
    assert main(["sim", "sweep", "--workload", "chat", "--param", "sessions=2", "turns=2",
                 "--no-plots", *out, *options]) == 1
    captured = capsys.readouterr()
    assert why in captured.err
    assert "== " not in captured.out  # no run had started


def test_sim_without_a_command_asks_for_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim"]) == 2
    assert "choose a command" in capsys.readouterr().err


def test_help_lists_the_sim_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "sim" in capsys.readouterr().out


def test_bench_sim_reports_requests_per_second(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "speed.json"
    code = main(["bench", "sim", "--sessions", "20", "--turns", "2", "--rounds", "2",
                 "--capacity", "100K", "--json", str(out)])
    assert code == 0
    assert "requests/s of wall time" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["requests"] == 40 and len(result["rounds"]) == 2
    assert result["median_requests_per_s"] > 0


def test_bench_sim_refuses_a_bad_capacity_or_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "sim", "--capacity", "0"]) == 2  # refused as the options parse
    assert "argument --capacity: capacity must be" in capsys.readouterr().err
    assert main(["bench", "sim", "--sessions", "0"]) == 2
    assert "argument --sessions: invalid int >= 1 value: '0'" in capsys.readouterr().err


def test_bench_sim_starts_each_round_with_the_previous_result_collected(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from radixkv.sim import speed

    results: list[weakref.ref[Any]] = []
    alive_at_start: list[bool] = []

    def simulate(requests: Any, config: Any) -> Any:
        alive_at_start.append(any(ref() is not None for ref in results))
        result = real(requests, config)
        results.append(weakref.ref(result))
        return result

    real = speed.simulate
    monkeypatch.setattr(speed, "simulate", simulate)
    assert main(["bench", "sim", "--sessions", "4", "--turns", "2", "--rounds", "3",
                 "--capacity", "10K"]) == 0
    # the tree's nodes form cycles: only a collection frees a dropped result
    assert alive_at_start == [False, False, False]


def test_a_hybrid_comparison_draws_the_comparison_plot(tmp_path: Path) -> None:
    code = main(["sim", "run", "--workload", "system", "--param", "groups=2", "prompts=4",
                 "system_len=600", "--capacity", "100K", "--components", "full", "full+mamba",
                 "--hints", "both", "--out", str(tmp_path)])
    assert code == 0
    runs = json.loads((tmp_path / "report.json").read_text())["runs"]
    assert [r["label"] for r in runs] == [
        "full 100K", "full+mamba 100K", "full+mamba no hints 100K"]
    assert runs[1]["token_hit_rate"] > runs[2]["token_hit_rate"]
    assert (tmp_path / "comparison.png").stat().st_size > 0


def test_without_matplotlib_the_report_is_written_and_plots_are_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    code = main(["sim", "run", "--workload", "system", "--param", "groups=1", "prompts=2",
                 "--out", str(tmp_path)])
    assert code == 0
    assert "matplotlib is not installed" in capsys.readouterr().out
    assert (tmp_path / "report.json").exists() and not list(tmp_path.glob("*.png"))
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<li>no pictures: matplotlib is not installed" in page and "<img" not in page


def test_sim_run_with_a_host_tier_reports_hits_per_tier(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "run", "--workload", "chat", "--param", "sessions=16", "turns=3",
                 "rate=4", "think=20", "--capacity", "12K", "--host-capacity", "1M",
                 "--write-policy", "write_through_selective", "--no-plots",
                 "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "== full 12K + host 1M ==" in out and "token hit rate by tier: device" in out
    run = json.loads((tmp_path / "report.json").read_text())["runs"][0]
    assert run["config"]["host_capacity"] == 1_000_000
    assert run["config"]["write_policy"] == "write_through_selective"
    assert run["hit_rate_by_tier"]["host"] > 0
    assert main(["sim", "run", "--capacity", "1M", "--host-capacity", "inf"]) == 1
