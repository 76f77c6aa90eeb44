"""``radixkv bench opcodes``: exact, repeatable instruction counts of the bench operations."""

import json
import sys

from radixkv.bench.opcodes import OpcodeTally, count_op
from radixkv.bench.runner import bench_shape, make_workload


def _loop(times: int) -> int:
    total = 0
    for step in range(times):
        total += step
    return total


def test_a_loop_twice_as_long_counts_exactly_its_extra_iterations() -> None:
    counts = []
    for times in (10, 20, 30):
        tally = OpcodeTally()
        assert tally.call(_loop, times) == sum(range(times))
        counts.append(tally.opcodes)
    assert counts[0] > 0
    assert counts[2] - counts[1] == counts[1] - counts[0] > 0  # the same per iteration


def test_the_tally_counts_only_below_its_call_and_puts_the_previous_trace_back() -> None:
    seen: list[str] = []

    def previous(frame, event, arg):  # type: ignore[no-untyped-def]
        seen.append(event)
        return None

    old = sys.gettrace()
    sys.settrace(previous)
    try:
        tally = OpcodeTally()
        tally.call(_loop, 5)
        assert sys.gettrace() is previous
    finally:
        sys.settrace(old)
    assert tally.calls == 1
    assert tally.opcodes == _count(_loop, 5)  # the caller's own lines are not counted


def _count(function, item):  # type: ignore[no-untyped-def]
    tally = OpcodeTally()
    tally.call(function, item)
    return tally.opcodes


def test_each_operation_counts_the_same_in_every_run() -> None:
    work = make_workload(300)
    shape = bench_shape("full+swa", 1, work)
    for op in ("insert", "match_prefix", "evict", "lock_unlock", "release"):
        first = count_op(shape, work, op, skip=5, sample=20)
        again = count_op(shape, work, op, skip=5, sample=20)
        assert first == again
        assert first["calls"] == 20 and first["per_call"] > 10, op


def test_bench_opcodes_command_writes_json_and_ratios_to_a_baseline(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from radixkv.cli import main

    out = tmp_path / "opcodes.json"
    args = ["bench", "opcodes", "--num-seqs", "200", "--components", "full", "--page-size",
            "16", "--ops", "match_prefix", "lock_unlock", "--sample", "30"]
    assert main([*args, "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["results"]
    assert [(r["op"], r["calls"]) for r in rows] == [("match_prefix", 30), ("lock_unlock", 30)]
    capsys.readouterr()
    assert main([*args, "--baseline", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("  1.000") == 2  # the same code counts exactly its baseline


def test_the_short_workload_is_counted_and_a_baseline_of_another_workload_is_refused(  # type: ignore[no-untyped-def]
        tmp_path, capsys) -> None:
    import pytest

    from radixkv.cli import main

    short, reference = tmp_path / "short.json", tmp_path / "reference.json"
    common = ["--components", "full", "--page-size", "1", "--ops", "match_prefix",
              "--sample", "20"]
    assert main(["bench", "opcodes", "--workload", "short", "--num-seqs", "400", *common,
                 "--json", str(short)]) == 0
    data = json.loads(short.read_text())
    assert (data["workload"], data["num_seqs"]) == ("short", 400)
    short_match = data["results"][0]["per_call"]
    assert main(["bench", "opcodes", "--num-seqs", "200", *common, "--json",
                 str(reference)]) == 0
    assert json.loads(reference.read_text())["workload"] == "reference"
    # a short prompt's match walks fewer nodes than a reference query's
    assert short_match < json.loads(reference.read_text())["results"][0]["per_call"]
    capsys.readouterr()
    with pytest.raises(SystemExit, match="counts the reference workload, not short"):
        main(["bench", "opcodes", "--workload", "short", "--num-seqs", "400", *common,
              "--baseline", str(reference)])
