"""radixkv's KV connector in a real vLLM 0.32 engine on CPU (the tiny seeded Llama), with
vLLM's own prefix caching off, against the same engine without a connector (``runs.py``).

- Exact: every greedy token equal and every logprob within 1e-5, with a big pool, radixkv
  pages of 16 (half a vLLM block), chunked prefill of 32 tokens a step, and 192 or 256
  tokens of KV (queueing, preemption, eviction). radixkv's cache is audited after every batch.
- Every reused token came from radixkv: vLLM reports as cached exactly the tokens the
  connector loaded (on first admissions), and the worker copied every row planned.
- Namespaces: a prompt under one ``cache_salt`` reuses nothing cached under another.
- Beside vLLM's own prefix cache (192 tokens of KV), still exact, radixkv loading what vLLM's
  cache no longer holds.
- Negative control: with ``RADIXKV_VLLM_NEGATIVE_CONTROL=1`` every load writes the request's
  first reused row into every reused position; the outputs must then differ.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..harness import Result
from ..workload import Run, assert_same
from .engine import BLOCK_SIZE, VLLM_SKIP_REASON, VLLMEngine

pytest.importorskip("vllm", reason=VLLM_SKIP_REASON)

Runner = Callable[[str], tuple[Run, dict[str, Any]]]
EXACT = ["radixkv", "radixkv_page16", "radixkv_chunked", "radixkv_small", "radixkv_medium"]


def results(run: Run) -> list[Result]:
    return [result for turn in run.results for result in turn] + run.control


@pytest.mark.parametrize("name", EXACT)
def test_radixkv_gives_the_tokens_and_logprobs_of_no_cache(vllm_run: Runner, name: str) -> None:
    reference, _ = vllm_run("none")
    run, stats = vllm_run(name)
    assert_same(results(reference), results(run), name)
    assert sum(result.cached_tokens for result in results(run)) > 0
    assert not stats["vllm_prefix_caching"]


@pytest.mark.parametrize("name", EXACT)
def test_every_reused_token_came_from_radixkv(vllm_run: Runner, name: str) -> None:
    run, stats = vllm_run(name)
    counters, worker = stats["counters"], stats["worker"]
    reported = sum(result.cached_tokens for result in results(run))
    # vLLM counts a request's cached tokens at its first admission only
    if counters["preempted"] == 0:
        assert counters["loaded_tokens"] == reported
    else:
        assert counters["loaded_tokens"] >= reported
    assert worker["loaded_rows"] == counters["loaded_tokens"]
    assert worker["saved_rows"] == counters["saved_tokens"] > 0
    assert stats["active_leases"] == 0 and stats["tracked_requests"] == 0


def test_later_turns_reuse_pages_holding_decoded_tokens(vllm_run: Runner) -> None:
    run, _ = vllm_run("radixkv")
    beyond_prompt = 0
    for turn in range(1, len(run.prompts)):
        previous = dict(zip(run.conversations[turn - 1], run.prompts[turn - 1]))
        for conversation, result in zip(run.conversations[turn], run.results[turn]):
            prompt_pages = len(previous[conversation]) // BLOCK_SIZE * BLOCK_SIZE
            beyond_prompt += max(0, result.cached_tokens - prompt_pages)
    assert beyond_prompt > 0, "no reused page held a token the engine had decoded"


def test_chunked_prefill_took_more_steps(vllm_run: Runner) -> None:
    _, whole = vllm_run("radixkv")
    _, chunked = vllm_run("radixkv_chunked")
    assert chunked["counters"]["steps"] > whole["counters"]["steps"]


def test_small_kv_made_radixkv_evict_and_vllm_preempt(vllm_run: Runner) -> None:
    _, small = vllm_run("radixkv_small")
    _, medium = vllm_run("radixkv_medium")
    assert small["evicted_tokens"] > 0 and medium["evicted_tokens"] > 0
    assert small["counters"]["preempted"] + medium["counters"]["preempted"] > 0


def test_radixkv_beside_vllms_own_prefix_cache_is_exact_and_loads_what_vllm_lacks(
        vllm_run: Runner) -> None:
    reference, _ = vllm_run("none")
    run, stats = vllm_run("radixkv_beside_vllm")
    assert_same(results(reference), results(run), "radixkv beside vLLM's cache")
    assert stats["vllm_prefix_caching"]
    assert stats["counters"]["loaded_tokens"] > 0  # beyond what vLLM's own cache held


def test_negative_control_wrong_loaded_rows_change_the_outputs(vllm_run: Runner) -> None:
    reference, _ = vllm_run("none")
    run, stats = vllm_run("radixkv_negative")
    assert stats["counters"]["loaded_tokens"] > 0
    with pytest.raises(AssertionError, match="differ"):
        assert_same(results(reference), results(run), "negative control")


def test_cache_salts_never_share_a_prefix(vllm_checkpoint: Path, engine_logs: Path) -> None:
    prompt = list(range(3, 3 + 3 * BLOCK_SIZE))
    later = [*prompt, 7]
    with VLLMEngine(vllm_checkpoint, radixkv=True, log_dir=engine_logs) as engine:
        engine.generate([prompt], salts=["tenant-a"])
        cached = [engine.generate([later], salts=[salt])[0].cached_tokens
                  for salt in ("tenant-b", None, "tenant-a")]
        engine.stats()  # audits the cache
    assert cached == [0, 0, 3 * BLOCK_SIZE]
