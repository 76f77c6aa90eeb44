"""How much radixkv's connector reuses against vLLM's own prefix caching at the same KV
capacity, on the multi-turn workload with 192 and 256 tokens of KV (both caches evict; vLLM
queues and preempts requests). Reuse is what vLLM itself reports per request
(``num_cached_tokens``, counted at a request's first admission), summed over the workload;
the connector runs with vLLM's own prefix caching off, so its reuse is all radixkv's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..workload import Run
from .engine import VLLM_SKIP_REASON
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
