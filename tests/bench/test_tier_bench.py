"""Smoke tests of ``radixkv bench tiers`` at small sizes: the command runs, prints its table
and writes JSON with every field; the counts show the inputs did what each operation
claims (host hits, load-backs, demotions). Timings are never asserted."""

from __future__ import annotations

import json

import pytest

from radixkv.bench.cli import TIER_OPERATIONS
from radixkv.bench.tier_bench import TIER_OPS, TierBenchConfig, host_hits, run_op, sizes
from radixkv.cli import main


def test_the_parser_lists_the_benchmarks_operations() -> None:
    assert TIER_OPERATIONS == TIER_OPS


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("tiers") / "tiers.json"
    code = main(["bench", "tiers", "--num-seqs", "60", "--rounds", "2", "--page-size", "1",
                 "16", "--evict-batch", "64", "--verify", "--quiet", "--json", str(out)])
    assert code == 0
    loaded: dict[str, object] = json.loads(out.read_text())
    return loaded


def test_the_json_has_every_operation_tier_and_round(document: dict[str, object]) -> None:
    results = document["results"]
    assert isinstance(results, list)
    assert len(results) == 2 * 2 * len(TIER_OPS) * 2  # pages x rounds x ops x tiers
    for row in results:
        assert {"page_size", "round", "op", "tier", "count", "ops_per_s", "p50_us",
                "p99_us", "latency_us", "counts"} <= row.keys()
        assert row["count"] > 0 and row["ops_per_s"] > 0 and row["p50_us"] > 0
    summary = document["summary"]
    assert isinstance(summary, list)
    assert {(s["page_size"], s["op"]) for s in summary} == {
        (page, op) for page in (1, 16) for op in TIER_OPS}
    for row in summary:
        for tier in ("off", "host"):
            assert row[tier]["rounds"] == 2 and row[tier]["ops_per_s"] > 0
            assert row[tier]["p50_us"] > 0
        assert len(row["ratio_rounds"]) == 2 and row["ratio"] > 0
    assert document["copy_engine"] == "NumpyCopyEngine (no buffers)"


def _counts(document: dict[str, object], op: str, tier: str) -> list[dict[str, int]]:
    results = document["results"]
    assert isinstance(results, list)
    return [r["counts"] for r in results if r["op"] == op and r["tier"] == tier]


def test_the_inputs_reach_the_host_tier_only_when_it_is_on(
        document: dict[str, object]) -> None:
    inputs = document["inputs"]
    assert isinstance(inputs, list)
    assert all(entry["host_hit_sequences"] > 0 for entry in inputs)
    assert all(c["host_tokens"] > 0 for c in _counts(document, "match_host", "host"))
    assert all(c["host_tokens"] == 0 for c in _counts(document, "match_host", "off"))
    for counts in _counts(document, "admit_load_back", "host"):
        assert counts["load_requests"] > 0 and counts["host_hit_tokens"] > 0
    assert all(c["load_requests"] == 0 for c in _counts(document, "admit_load_back", "off"))
    assert all(c["copies"] == 0 for c in _counts(document, "match_idle", "host"))


def test_demotion_keeps_the_nodes_that_tier_off_eviction_drops(
        document: dict[str, object]) -> None:
    for op in ("evict_demote", "evict_write_back"):
        on, off = _counts(document, op, "host"), _counts(document, op, "off")
        for mine, theirs in zip(on, off):
            assert mine["evicted_tokens"] > 0 and theirs["evicted_tokens"] > 0
            assert mine["host_cached"] > 0 and theirs["host_cached"] == 0
            assert mine["nodes"] > theirs["nodes"]


def test_each_operation_leaves_a_consistent_cache() -> None:
    config = TierBenchConfig(num_seqs=30, page_size=4, evict_batch=32, verify=True)
    size = sizes(config)
    items = host_hits(config, size)
    assert items
    for op in TIER_OPS:
        for on in (True, False):
            result = run_op(op, config, size, on, items)
            assert result.timing.count > 0
