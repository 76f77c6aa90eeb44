"""The engine runs the vLLM tests share, each started once per session (an engine start
costs 10-40 s here): the multi-turn workload of ``tests/engines/workload.py`` on vLLM 0.32
with and without radixkv's connector.

Every connector run but ``radixkv_beside_vllm`` has vLLM's own prefix caching off, so every
reused token came from radixkv. The KV capacity is vLLM's (``num_gpu_blocks_override``
blocks of 32 tokens), and radixkv's row buffer has as many tokens.
"""

from __future__ import annotations

from typing import Any

from radixkv.integrations.vllm import NEGATIVE_CONTROL_ENV

SMALL = {"num_gpu_blocks_override": 6, "max_model_len": 160}
"""192 tokens of KV: below the ~330 tokens of a turn's batch, so vLLM queues and preempts
requests, and the caches evict (the longest prompt, ~140 tokens with its outputs, fits)."""

MEDIUM = {"num_gpu_blocks_override": 8, "max_model_len": 160}
"""256 tokens of KV."""

RUNS: dict[str, dict[str, Any]] = {
    "none": {},
    "radixkv": {"radixkv": True},
    "radixkv_page16": {"radixkv": True, "connector_extra": {"page_size": 16}},
    "radixkv_chunked": {"radixkv": True, "max_num_batched_tokens": 32},
    "radixkv_small": {"radixkv": True, **SMALL},
    "radixkv_medium": {"radixkv": True, **MEDIUM},
    "radixkv_negative": {"radixkv": True, "env": {NEGATIVE_CONTROL_ENV: "1"}},
    "radixkv_beside_vllm": {"radixkv": True, "enable_prefix_caching": True, **SMALL},
    "vllm_small": {"enable_prefix_caching": True, **SMALL},
    "vllm_medium": {"enable_prefix_caching": True, **MEDIUM},
}
