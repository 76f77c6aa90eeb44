"""The side-by-side table of ``radixkv bench ops``: which ratios it marks as short of the
target."""

from __future__ import annotations

from radixkv.bench.report import TARGET, render_shape

SHAPE = ("short", "full", 1)


def _summary(op: str, tree: str, ops_per_s: float) -> dict[str, object]:
    return {"workload": "short", "components": "full", "page_size": 1, "op": op,
            "tree": tree, "rounds": 3, "ops_per_s": ops_per_s, "p50_us": 1.0,
            "p99_us": 2.0, "mean_us": 1.5}


def test_ratios_below_the_three_times_target_are_marked_and_the_others_are_not() -> None:
    summary = [_summary(op, tree, value) for op, tree, value in (
        ("match_prefix", "radixkv", 290.0), ("match_prefix", "sglang-rust", 100.0),
        ("insert", "radixkv", 310.0), ("insert", "sglang-rust", 100.0))]
    ratios = [{"workload": "short", "components": "full", "page_size": 1, "op": "match_prefix",
               "vs_rust": 2.9}, {"workload": "short", "components": "full", "page_size": 1,
                                 "op": "insert", "vs_rust": 3.1}]
    text = render_shape(SHAPE, summary, ratios, {}, ("radixkv", "sglang-rust"))
    header, *table = text.split("radixkv ÷ SGLang")[1].splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in table[1:] if line.strip()}
    assert TARGET == 3.0 and "target ≥ 3×" in header
    assert rows["match_prefix"] == ["2.90", "<3x", "-"]
    assert rows["insert"] == ["3.10", "-"]
