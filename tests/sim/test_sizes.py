"""``radixkv sim`` refuses sizes past what a machine holds when it parses its options, with
one line and exit code 2 (issue #33: numpy's MemoryError escaped with a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from radixkv.cli import main
from radixkv.sim.sizes import MAX_WORKLOAD_TOKENS, workload_tokens
from radixkv.sim.workloads import make_workload


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.splitlines()[0]


@pytest.mark.parametrize("option", ["--capacity", "--host-capacity"])
def test_a_huge_capacity_is_refused_when_the_options_are_parsed(
        option: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "run", option, "1000G", "--no-plots"]) == 2
    assert "past the simulator's limit of 1G tokens" in error_line(capsys)


@pytest.mark.parametrize(("capacity", "why"), [
    (["1M", "abc"], "capacity must be a positive whole number of tokens"),
    (["1e400"], "got '1e400'")])
def test_a_capacity_that_is_no_number_of_tokens_is_a_usage_error(
        capacity: list[str], why: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "sweep", "--capacity", *capacity, "--no-plots"]) == 2
    assert why in error_line(capsys)


def test_a_huge_block_is_refused_when_the_options_are_parsed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 4, "output_length": 1, '
                     '"hash_ids": [1]}\n')
    assert main(["sim", "replay", str(trace), "--block", str(10**12), "--no-plots"]) == 2
    assert "at most 1048576 tokens a hash id" in error_line(capsys)


@pytest.mark.parametrize("params", [["turns=1000000000"], ["user_len=1000000000000"],
                                    ["sessions=100000000", "turns=100"]])
def test_a_workload_too_large_to_generate_is_refused_before_it_is_generated(
        params: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "run", "--workload", "chat", "--param", *params, "--no-plots",
                 "--out", str(tmp_path)])
    assert code == 2
    assert "would generate about" in error_line(capsys)
    assert list(tmp_path.iterdir()) == []  # nothing ran


@pytest.mark.parametrize(("name", "params"), [
    ("system", {"groups": 3, "prompts": 4, "skew": 1.0}),
    ("chat", {"sessions": 3, "turns": 4, "jitter": 0.5}),
    ("fewshot", {"families": 2, "questions": 5}),
    ("agent", {"agents": 2, "steps": 3, "jitter": 0.2}),
])
def test_the_workload_estimate_bounds_what_is_generated(name: str,
                                                        params: dict[str, object]) -> None:
    requests = make_workload(name, **params)
    generated = sum(len(r.prompt) + len(r.output) for r in requests)
    assert generated <= workload_tokens(name, params) <= MAX_WORKLOAD_TOKENS
