"""How much radixkv's connector reuses against vLLM's own prefix caching at the same KV
capacity, on the multi-turn workload with 192 and 256 tokens of KV (both caches evict; vLLM
queues and preempts requests); and, at 192 tokens, with radixkv's host tier and L3 (a
directory) below its rows, which then hold what the rows and vLLM's device cache evicted.
Reuse is what vLLM itself reports per request (``num_cached_tokens``, counted at a
request's first admission), summed over the workload; the connector runs with vLLM's own
prefix caching off, so its reuse is all radixkv's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..workload import Run, assert_same, make_workload, run_workload
from .engine import BLOCK_SIZE, VLLM_SKIP_REASON, VLLMEngine
from .runs import SMALL
from .test_vllm_connector import results

pytest.importorskip("vllm", reason=VLLM_SKIP_REASON)

Runner = Callable[[str], tuple[Run, dict[str, Any]]]


@pytest.mark.parametrize("size", ["small", "medium"])
def test_radixkv_reuses_at_least_nine_tenths_of_vllms_own_cache(vllm_run: Runner,
                                                                 size: str) -> None:
    own, own_stats = vllm_run(f"vllm_{size}")
    ours, ours_stats = vllm_run(f"radixkv_{size}")
    own_reused = sum(result.cached_tokens for result in results(own))
    ours_reused = sum(result.cached_tokens for result in results(ours))
    print(f"\n{size}: vLLM's own prefix cache reused {own_reused} tokens, radixkv "
          f"{ours_reused} ({ours_reused / own_reused:.0%})")
    assert own_stats["vllm_prefix_caching"] and not ours_stats["vllm_prefix_caching"]
    assert own_reused > 0
    assert ours_reused >= 0.9 * own_reused


def test_with_l3_below_its_rows_radixkv_reuses_more_than_vllms_own_cache(
        vllm_run: Runner, vllm_checkpoint: Path, engine_logs: Path, tmp_path: Path) -> None:
    own, _ = vllm_run("vllm_small")
    rows_only, _ = vllm_run("radixkv_small")
    reference, _ = vllm_run("none")
    extra = {"host_tokens": 4096, "storage": f"file://{tmp_path}",
             "prefetch_threshold": BLOCK_SIZE, "storage_wait": "wait_complete"}
    with VLLMEngine(vllm_checkpoint, radixkv=True, connector_extra=extra, log_dir=engine_logs,
                    **SMALL) as engine:
        with_l3 = run_workload(engine, make_workload())  # type: ignore[arg-type]
        stats = engine.stats()
        engine.close_cache()
    reused = {name: sum(result.cached_tokens for result in results(run))
              for name, run in (("own", own), ("rows", rows_only), ("with_l3", with_l3))}
    print(f"\n192 tokens of KV: vLLM's own prefix cache reused {reused['own']} tokens, "
          f"radixkv {reused['rows']}, radixkv with a host tier and L3 {reused['with_l3']} "
          f"(restored: {stats['restored']})")
    assert_same(results(reference), results(with_l3), "radixkv with L3")
    assert stats["restored"]["restored_tokens"] > 0
    assert reused["with_l3"] > reused["own"] and reused["with_l3"] > reused["rows"]
