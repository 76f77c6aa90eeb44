"""The short-prompt workload of ``radixkv bench ops``: its documented draws, its reference
values, and that it runs alone and through the worker protocol of the side-by-side run."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from radixkv.bench import report
from radixkv.bench.peers.process import Worker
from radixkv.bench.runner import WorkloadSizes, make_workload, workload_info
from radixkv.bench.short import ShortConfig, short_prompts, short_queries
from radixkv.bench.suite import Plan, Progress, check_same_inputs, run_plan
from radixkv.cli import main


def documented_prompts(count: int) -> list[list[int]]:
    """The module docstring's procedure, written out independently."""
    rng = random.Random(16)
    systems = []
    for _ in range(8):
        length = rng.randint(24, 40)
        systems.append([rng.randint(1, 32000) for _ in range(length)])
    prompts = []
    for _ in range(count):
        system = systems[rng.randint(0, 7)]
        length = rng.randint(16, 40)
        prompts.append(system + [rng.randint(1, 32000) for _ in range(length)])
    return prompts


def sha256_text(seqs: list[list[int]]) -> str:
    sha = hashlib.sha256()
    for seq in seqs:
        sha.update((",".join(map(str, seq)) + "\n").encode())
    return sha.hexdigest()


def test_short_prompts_follow_the_documented_draws() -> None:
    assert short_prompts(ShortConfig(prompts=500)) == documented_prompts(500)


def test_short_prompts_are_40_to_80_tokens_with_eight_system_prompts() -> None:
    prompts = short_prompts(ShortConfig(prompts=2000))
    assert {len(p) for p in prompts} <= set(range(40, 81))
    assert 55 <= sum(map(len, prompts)) / len(prompts) <= 65
    heads = {tuple(p[:24]) for p in prompts}  # every system prompt is at least 24 tokens
    assert len(heads) == 8


def test_short_queries_exact_hits_the_cached_half_system_the_other_half() -> None:
    config = ShortConfig(prompts=300)
    prompts = short_prompts(config)
    items, kinds = short_queries(prompts, 150, config)
    assert len(items) == 300 and sum(kinds.values()) == 300
    cached, uncached = prompts[:150], prompts[150:]
    exact = [q for q in items if q in cached]
    system = [q for q in items if q in uncached]
    assert (len(exact), len(system)) == (kinds["exact"], kinds["system"])
    misses = [q for q in items if q not in prompts]
    assert len(misses) == kinds["miss"]
    assert all(40 <= len(q) <= 80 for q in misses)
    assert items == short_queries(prompts, 150, config)[0]  # seeded


def test_default_short_workload_matches_its_documented_reference_values() -> None:
    work = make_workload(20_000, name="short")
    info = workload_info(work)
    assert report.check_reference(info) == []
    assert info["sequences_sha256"] == sha256_text(documented_prompts(20_000))
    assert "documented reference values: all match" in report.render_workload(info)
    assert work.kv_size == 655_360
    assert work.request_rows == 16_484  # min(P, K // shortest prompt) + 100


def test_bench_ops_short_workload_times_all_six_operations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "short.json"
    code = main(["bench", "ops", "--workload", "short", "--short-prompts", "300", "--rounds",
                 "1", "--components", "full", "full+swa", "--page-size", "1", "16",
                 "--verify", "--quiet", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "workload short: N=300" in text
    for heading in ("== short: full, page 1", "== short: full+swa, page 16"):
        assert heading in text
    document = json.loads(out.read_text())
    assert list(document["workloads"]) == ["short"]
    assert {r["op"] for r in document["results"]} == {
        "insert", "match_prefix", "evict", "lock_unlock", "release", "admit_finish"}
    assert {r["workload"] for r in document["summary"]} == {"short"}
    admit = [r for r in document["results"] if r["op"] == "admit_finish"]
    assert all(r["counts"] == {"cached_prompts": 150} and r["count"] == 135 for r in admit)
    # K exceeds the prompts' tokens: every prompt is prepared and fills without eviction
    assert "counts: F=300 R=300" in text


def test_side_by_side_path_runs_the_short_workload_through_a_worker() -> None:
    sizes = WorkloadSizes(reference=None, short=200)
    worker = Worker("radixkv", sizes, verify=True)
    try:
        infos = {"short": workload_info(make_workload(200, name="short"))}
        check_same_inputs(infos, [worker.hello])
        plan = Plan((("short", "full", 1), ("short", "full+mamba", 1)), ("radixkv",), 1,
                    {"short": ("insert", "admit_finish")})
        records = run_plan(plan, {"radixkv": worker.run}, Progress(plan, enabled=False))
    finally:
        worker.close()
    assert [(r["workload"], r["components"], r["op"]) for r in records] == [
        ("short", "full", "insert"), ("short", "full", "admit_finish"),
        ("short", "full+mamba", "insert"), ("short", "full+mamba", "admit_finish")]
    assert all(r["count"] > 0 and r["ops_per_s"] > 0 for r in records)


def test_check_same_inputs_names_a_workload_whose_inputs_differ() -> None:
    infos = {"short": workload_info(make_workload(50, name="short"))}
    other = {"short": workload_info(make_workload(60, name="short"))}
    with pytest.raises(RuntimeError, match="different short inputs"):
        check_same_inputs(infos, [{"tree": "peer", "workloads": other}])
