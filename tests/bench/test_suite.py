"""The order in which a side-by-side run drives the trees under test."""

from __future__ import annotations

from collections.abc import Iterator

from radixkv.bench.runner import Record
from radixkv.bench.suite import Plan, Progress, run_plan, tree_order


def _recording_runners(trees: tuple[str, ...], calls: list[tuple[str, str, int, str]]
                       ) -> dict[str, object]:
    def runner_for(tree: str):  # type: ignore[no-untyped-def]
        def run(workload: str, components: str, page_size: int, ops: tuple[str, ...]
                ) -> Iterator[Record]:
            for op in ops:
                calls.append((tree, components, page_size, op))
                yield {"op": op, "ops_per_s": 1.0}
        return run
    return {tree: runner_for(tree) for tree in trees}


def test_every_tree_runs_an_operation_before_any_tree_runs_the_next() -> None:
    trees = ("radixkv", "sglang-rust", "sglang-python")
    plan = Plan((("reference", "full", 1),), trees, 2,
                {"reference": ("insert", "match_prefix", "evict")})
    calls: list[tuple[str, str, int, str]] = []
    records = run_plan(plan, _recording_runners(trees, calls),  # type: ignore[arg-type]
                       Progress(plan, enabled=False))
    ops = [op for _tree, _c, _p, op in calls]
    assert ops == ["insert"] * 3 + ["match_prefix"] * 3 + ["evict"] * 3 + \
        ["insert"] * 3 + ["match_prefix"] * 3 + ["evict"] * 3
    # the first tree of each operation rotates: by operation, then by round
    firsts = [calls[i][0] for i in range(0, len(calls), 3)]
    assert firsts == ["radixkv", "sglang-rust", "sglang-python",
                      "sglang-rust", "sglang-python", "radixkv"]
    assert [(r["round"], r["tree"], r["op"]) for r in records[:4]] == [
        (0, "radixkv", "insert"), (0, "sglang-rust", "insert"),
        (0, "sglang-python", "insert"), (0, "sglang-rust", "match_prefix")]


def test_tree_order_is_a_rotation_of_all_trees() -> None:
    trees = ("a", "b", "c")
    assert tree_order(trees, 0, 0) == ("a", "b", "c")
    assert tree_order(trees, 0, 1) == ("b", "c", "a")
    assert tree_order(trees, 1, 1) == ("c", "a", "b")
    assert tree_order(trees, 2, 4) == ("a", "b", "c")


def test_a_skipped_peer_shape_runs_only_radixkv() -> None:
    trees = ("radixkv", "sglang-rust")
    plan = Plan((("reference", "full+mamba", 16),), trees, 1, {"reference": ("insert",)})
    calls: list[tuple[str, str, int, str]] = []
    run_plan(plan, _recording_runners(trees, calls),  # type: ignore[arg-type]
             Progress(plan, enabled=False))
    assert calls == [("radixkv", "full+mamba", 16, "insert")]


def _plan_of(argv: list[str]) -> Plan:
    import argparse

    from radixkv.bench.cli import _plan, add_bench

    parser = argparse.ArgumentParser()
    add_bench(parser)
    plan, _sizes = _plan(parser.parse_args(["ops", *argv]))
    assert isinstance(plan, Plan)
    return plan


def test_peer_cores_choose_which_sglang_trees_run_beside_radixkv() -> None:
    assert _plan_of(["--against", "sglang"]).trees == (
        "radixkv", "sglang-rust", "sglang-python")
    assert _plan_of(["--against", "sglang", "--peer-cores", "rust"]).trees == (
        "radixkv", "sglang-rust")
    assert _plan_of(["--peer-cores", "rust"]).trees == ("radixkv",)
