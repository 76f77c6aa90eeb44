"""What the radixkv backend supports in SGLang, checked once, at construction.

Supported: one full-attention KV pool behind SGLang's stock ``TokenToKVPoolAllocator``
(page size 1) or ``PagedTokenToKVPoolAllocator`` (page size > 1), with LoRA / cache-salt
namespaces, EAGLE bigram keys, chunked prefill, retraction by recompute and KV events.
Everything else is refused with :class:`UnsupportedConfiguration` naming the flag, rather
than run with a cache that would be wrong for it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SUPPORTED_ALLOCATORS", "UnsupportedConfiguration", "check_supported",
           "tier_reasons", "unsupported_reasons"]

SUPPORTED_ALLOCATORS = ("TokenToKVPoolAllocator", "PagedTokenToKVPoolAllocator")
"""Class names of the allocators the backend can stand on (exact classes, not subclasses:
the SWA, hierarchical-sparse, NPU and page-interleave ones keep other slot spaces)."""


class UnsupportedConfiguration(ValueError):
    """An SGLang configuration the radixkv backend does not support."""


def check_supported(ctx: Any, tiers: Any = None) -> None:
    """Raise :class:`UnsupportedConfiguration` listing every unsupported setting of the
    ``TreeCacheBuildContext`` ``ctx`` (with the tiers below the device ``tiers``, a
    :class:`~.settings.TierSettings`, asks for); return quietly when there is none."""
    reasons = unsupported_reasons(ctx)
    if tiers is not None and tiers.host_tokens is not None:
        reasons += tier_reasons(ctx)
    if reasons:
        raise UnsupportedConfiguration(
            "--radix-cache-backend radixkv does not support: " + "; ".join(reasons)
            + ". Omit --radix-cache-backend to use SGLang's built-in cache.")


def unsupported_reasons(ctx: Any) -> list[str]:
    """Every unsupported setting of ``ctx``, as short sentences."""
    return [*_model_reasons(ctx), *_params_reasons(ctx.params), *_allocator_reasons(ctx),
            *_server_reasons()]


def tier_reasons(ctx: Any) -> list[str]:
    """What a host tier (and L3) cannot run with yet: other KV pool layouts, EAGLE's
    bigram keys, and parallel ranks (each rank's tree would restore on its own, and SGLang
    needs every rank to agree on a prefix's length)."""
    pool = ctx.params.token_to_kv_pool_allocator.get_kvcache()
    name = type(pool).__name__
    checks = (
        (name != "MHATokenToKVPool", f"the KV pool {name} (supported: MHATokenToKVPool)"),
        (bool(getattr(pool, "use_hnd", False))
         or getattr(pool, "kv_cache_layout", None) not in (None, "NHD", "nhd"),
         "a KV cache layout other than NHD"),
        (ctx.params.is_eagle, "EAGLE speculative decoding"),
        (int(ctx.tp_size) > 1, "tensor parallelism"),
        (int(getattr(ctx.params, "pp_size", 1)) > 1, "pipeline parallelism"),
    )
    return [f"{reason} with a host tier (RADIXKV_SGLANG_HOST_TOKENS)"
            for flag, reason in checks if flag]


def _model_reasons(ctx: Any) -> list[str]:
    checks = (
        (ctx.disable_radix_cache, "--disable-radix-cache (nothing to cache)"),
        (ctx.is_hybrid_swa, "hybrid sliding-window models (SWA pools)"),
        (ctx.is_hybrid_ssm, "hybrid Mamba / SSM models (state pools)"),
        (getattr(ctx, "is_dsa", False), "DeepSeek sparse-attention (DSA) pools"),
        (ctx.enable_hierarchical_cache, "--enable-hierarchical-cache (HiCache)"),
    )
    return [reason for flag, reason in checks if flag]


def _params_reasons(params: Any) -> list[str]:
    checks = (
        (getattr(params, "enable_session_radix_cache", False), "--enable-session-radix-cache"),
        (getattr(params, "enable_mamba_extra_buffer", False), "Mamba extra buffers"),
        (getattr(params, "sliding_window_size", None) is not None, "a sliding window"),
        (getattr(params, "tree_components", None) not in (None, ()),
         "multi-component (unified) trees"),
        (bool(getattr(params, "mtp_draft_device_pools", ())),
         "separate MTP draft KV pools"),
        (bool(getattr(params, "sidecar_draft_device_pools", ())),
         "sidecar draft KV pools"),
        (getattr(params, "attn_cp_size", 1) > 1, "attention context parallelism"),
    )
    return [reason for flag, reason in checks if flag]


def _allocator_reasons(ctx: Any) -> list[str]:
    allocator = ctx.params.token_to_kv_pool_allocator
    if allocator is None:
        return ["a cache without a KV allocator"]
    name = type(allocator).__name__
    if name not in SUPPORTED_ALLOCATORS:
        return [f"the KV allocator {name} (supported: {', '.join(SUPPORTED_ALLOCATORS)})"]
    if int(allocator.page_size) != int(ctx.params.page_size):
        return [f"an allocator page of {allocator.page_size} tokens under a cache page of "
                f"{ctx.params.page_size} (decode context parallelism)"]
    return []


def _server_reasons() -> list[str]:
    """Flags read from SGLang's runtime configuration bags (absent ones count as off)."""
    memory, disagg = _bag("get_memory"), _bag("get_disagg")
    checks = (
        (getattr(memory, "hicache_storage_backend", None), "--hicache-storage-backend"),
        (getattr(memory, "enable_lmcache", False), "--enable-lmcache"),
        (getattr(memory, "enable_flexkv", False), "--enable-flexkv"),
        (getattr(memory, "enable_hisparse", False), "--enable-hisparse"),
        (getattr(memory, "enable_unified_cache_external_linker", False),
         "--enable-unified-cache-external-linker"),
        (getattr(disagg, "disaggregation_decode_retraction_backup", None) == "host_pool",
         "--disaggregation-decode-retraction-backup host_pool"),
    )
    return [reason for flag, reason in checks if flag]


def _bag(getter: str) -> Any:
    """``sglang.srt.runtime_context.<getter>()``, or ``None`` where it is unavailable."""
    try:
        from sglang.srt import runtime_context  # type: ignore[import-not-found, unused-ignore]

        return getattr(runtime_context, getter)()
    except Exception:  # not published yet (unit tests), or an older SGLang
        return None
