"""Smoke tests of ``radixkv bench ops`` (radixkv alone; SGLang is not needed). Results are
never asserted, only that the run completes, prints the inputs and the table, and writes
JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radixkv.bench import report
from radixkv.bench.peers.process import Worker
from radixkv.bench.runner import WorkloadSizes, make_workload, workload_info
from radixkv.cli import main


def test_bench_ops_small_run_prints_inputs_table_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench-results" / "ops.json"
    code = main(["bench", "ops", "--workload", "reference", "--num-seqs", "40", "--rounds",
                 "2", "--components", "full", "full+swa", "--page-size", "1", "16", "--verify",
                 "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    info = workload_info(make_workload(40))
    assert info["sequences_sha256"] in text
    assert info["queries_sha256"] in text
    for heading in ("== full, page 1", "== full, page 16", "== full+swa, page 16"):
        assert heading in text
    for op in ("insert", "match_prefix", "evict", "lock_unlock", "release"):
        assert op in text
    assert "counts: F=41 R=41" in text
    document = json.loads(out.read_text())
    assert len(document["results"]) == 2 * 4 * 5
    assert {row["tree"] for row in document["summary"]} == {"radixkv"}
    assert document["workloads"]["reference"]["sequences_sha256"] == info["sequences_sha256"]
    assert "short" not in document["workloads"]


def test_bench_ops_mamba_single_operation(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "ops", "--workload", "reference", "--num-seqs", "30", "--rounds",
                 "1", "--components", "full+mamba", "--page-size", "1", "--ops", "release",
                 "--quiet"])
    assert code == 0
    text = capsys.readouterr().out
    assert "release" in text and "insert" not in text.split("==")[-1]


def test_workload_reference_values_are_checked() -> None:
    info = workload_info(make_workload(40))
    assert report.check_reference(info) == []  # only N = 5000 has spec reference values
    info["num_seqs"] = 5000
    assert report.check_reference(info)  # wrong on purpose: N = 40 values


def test_worker_protocol_with_radixkv() -> None:
    worker = Worker("radixkv", WorkloadSizes(reference=30, short=None), verify=True)
    try:
        assert worker.hello["workloads"] == {"reference": workload_info(make_workload(30))}
        records = list(worker.run("reference", "full", 1, ("insert", "lock_unlock")))
    finally:
        worker.close()
    assert [r["op"] for r in records] == ["insert", "lock_unlock"]
    assert all(r["ops_per_s"] > 0 and r["count"] > 0 for r in records)


def test_against_sglang_without_peers_venv_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "ops", "--num-seqs", "20", "--short-prompts", "50", "--rounds", "1",
                 "--components", "full",
                 "--page-size", "1", "--against", "sglang", "--quiet",
                 "--peers-python", str(tmp_path / "missing" / "python")])
    assert code == 1
    assert "make bench-peers" in capsys.readouterr().err
