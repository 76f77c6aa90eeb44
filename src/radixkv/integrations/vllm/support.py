"""What the radixkv connector supports in vLLM, checked once, when it is built.

Supported: a decoder whose KV is one full-attention cache group, on vLLM's CPU attention
backend, with synchronous scheduling (the connector plans a step's copies from the token ids
the step computes, which async scheduling does not know yet), chunked prefill, preemption,
LoRA and cache-salt namespaces, with or without vLLM's own prefix caching. Everything else is
refused with :class:`UnsupportedConfiguration` naming the setting.
"""

from __future__ import annotations

from typing import Any

__all__ = ["UnsupportedConfiguration", "check_supported", "unsupported_reasons"]


class UnsupportedConfiguration(ValueError):
    """A vLLM configuration the radixkv connector does not support."""


def check_supported(vllm_config: Any, kv_cache_config: Any) -> None:
    """Raise :class:`UnsupportedConfiguration` listing every unsupported setting; return
    quietly when there is none."""
    reasons = unsupported_reasons(vllm_config, kv_cache_config)
    if reasons:
        raise UnsupportedConfiguration(
            "the radixkv KV connector does not support: " + "; ".join(reasons))


def unsupported_reasons(vllm_config: Any, kv_cache_config: Any) -> list[str]:
    """Every unsupported setting, as short sentences."""
    reasons = []
    if getattr(vllm_config.scheduler_config, "async_scheduling", False):
        reasons.append("async scheduling (pass --no-async-scheduling, or "
                       "async_scheduling=False)")
    if getattr(vllm_config, "speculative_config", None) is not None:
        reasons.append("speculative decoding")
    if int(getattr(vllm_config.parallel_config, "pipeline_parallel_size", 1)) > 1:
        reasons.append("pipeline parallelism")
    groups = list(getattr(kv_cache_config, "kv_cache_groups", None) or [])
    if len(groups) != 1:
        reasons.append(f"{len(groups)} KV cache groups (hybrid or encoder-decoder models); "
                       "one full-attention group is supported")
    elif type(groups[0].kv_cache_spec).__name__ != "FullAttentionSpec":
        reasons.append(f"KV cache spec {type(groups[0].kv_cache_spec).__name__} "
                       "(FullAttentionSpec is supported)")
    return reasons
