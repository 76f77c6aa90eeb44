"""The benchmark plot draws a PNG from a `bench ops --json` result."""

import json
from pathlib import Path

from radixkv.bench.plot import main, trees_in

OPS = ("insert", "match_prefix", "evict", "lock_unlock", "release")


def test_plot_writes_a_png_from_a_bench_result(tmp_path: Path) -> None:
    summary = [
        {"components": "full", "page_size": 1, "tree": tree, "op": op, "ops_per_s": rate}
        for tree, rate in (("radixkv", 2000.0), ("sglang-rust", 1000.0))
        for op in OPS
    ]
    ratios = [{"components": "full", "page_size": 1, "op": op, "vs_rust": 2.0} for op in OPS]
    result = tmp_path / "bench.json"
    result.write_text(json.dumps({"summary": summary, "ratios": ratios}))
    picture = tmp_path / "bench.png"
    assert main([str(result), str(picture)]) == 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_legend_has_only_the_trees_the_result_ran() -> None:
    rows = [{"tree": tree} for tree in ("sglang-rust", "radixkv", "sglang-rust")]
    assert trees_in(rows) == ["radixkv", "sglang-rust"]
    assert trees_in([{"tree": "sglang-python"}, {"tree": "radixkv"}, {"tree": "sglang-rust"}]) \
        == ["radixkv", "sglang-rust", "sglang-python"]
