"""Build SGLang 0.5.23's UnifiedRadixCache for one benchmark shape (spec §4), on the CPU.

Runs only inside the peers worker, under ``.venv-peers``. SGLang ships no type information
usable here, so its objects are ``Any``; modules are loaded with :func:`importlib.import_module`
so that ``mypy --strict`` on this repository never needs SGLang installed.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

from ..adapters import SWA_WINDOW, BenchShape

DEVICE = "cpu"
NUM_LAYERS = 8
FULL_LAYERS = (3, 7)
HEAD_NUM = 2
HEAD_DIM = 16
MAMBA2 = {"intermediate_size": 256, "n_groups": 1, "num_heads": 2, "head_dim": 16,
          "state_size": 16, "conv_kernel": 4}


def _mod(name: str) -> Any:
    return importlib.import_module(name)


@dataclass
class SGLangParts:
    """A built cache with the pools and SGLang classes the adapter drives."""

    tree: Any
    allocator: Any
    req_pool: Any
    api: dict[str, Any]
    backend: str
    core_class: str


def api() -> dict[str, Any]:
    """The SGLang names the adapter uses, looked up once."""
    base = _mod("sglang.srt.mem_cache.base_prefix_cache")
    batch = _mod("sglang.srt.managers.schedule_batch")
    return {
        "RadixKey": _mod("sglang.srt.mem_cache.radix_cache").RadixKey,
        "MatchPrefixParams": base.MatchPrefixParams,
        "InsertParams": base.InsertParams,
        "EvictParams": base.EvictParams,
        "Req": batch.Req,
        "FINISH_LENGTH": batch.FINISH_LENGTH,
        "SamplingParams": _mod("sglang.srt.sampling.sampling_params").SamplingParams,
        "release_kv_cache": _mod("sglang.srt.mem_cache.common").release_kv_cache,
    }


def _pools(shape: BenchShape, dtype: Any, max_context: int) -> tuple[Any, Any, Any]:
    """(request-row pool, KV pool, allocator) for the shape's component set."""
    pool = _mod("sglang.srt.mem_cache.memory_pool")
    alloc = _mod("sglang.srt.mem_cache.allocator")
    other = [i for i in range(NUM_LAYERS) if i not in FULL_LAYERS]
    size, page = shape.kv_size, shape.page_size
    if shape.components == "full+mamba":
        mamba_utils = _mod("sglang.srt.configs.mamba_utils")
        env = _mod("sglang.srt.environ").envs
        with env.SGLANG_MAMBA_SSM_DTYPE.override("bfloat16"):
            state = mamba_utils.Mamba2StateShape.create(tp_world_size=1, **MAMBA2)
            params = mamba_utils.Mamba2CacheParams(shape=state, layers=other)
        rows = pool.HybridReqToTokenPool(
            size=shape.request_rows, mamba_size=shape.state_slots,
            mamba_spec_state_size=shape.request_rows, max_context_len=max_context,
            device=DEVICE, enable_memory_saver=False, cache_params=params,
            mamba_layer_ids=other, enable_mamba_extra_buffer=False)
        kv = pool.HybridLinearKVPool(
            size=size, dtype=dtype, page_size=page, head_num=HEAD_NUM, head_dim=HEAD_DIM,
            full_attention_layer_ids=list(FULL_LAYERS), device=DEVICE,
            enable_memory_saver=False, mamba_pool=rows.mamba_pool)
    else:
        rows = pool.ReqToTokenPool(size=shape.request_rows, max_context_len=max_context,
                                   device=DEVICE, enable_memory_saver=False)
    if shape.components == "full+swa":
        kv = _mod("sglang.srt.mem_cache.swa_memory_pool").SWAKVPool(
            size=size, size_swa=size, page_size=page, dtype=dtype, head_num=HEAD_NUM,
            head_dim=HEAD_DIM, swa_attention_layer_ids=other,
            full_attention_layer_ids=list(FULL_LAYERS), device=DEVICE)
        allocator = _mod("sglang.srt.mem_cache.allocator.swa").SWATokenToKVPoolAllocator(
            size=size, size_swa=size, page_size=page, dtype=dtype, device=DEVICE,
            kvcache=kv, need_sort=False)
        return rows, kv, allocator
    if shape.components == "full":
        kv = pool.MHATokenToKVPool(
            size=size, page_size=page, dtype=dtype, head_num=HEAD_NUM, head_dim=HEAD_DIM,
            layer_num=NUM_LAYERS, device=DEVICE, enable_memory_saver=False)
    if page == 1:
        allocator = alloc.TokenToKVPoolAllocator(size, dtype, DEVICE, kv, False)
    else:
        allocator = alloc.PagedTokenToKVPoolAllocator(size, page, dtype, DEVICE, kv, False)
    return rows, kv, allocator


def _server_args(page_size: int) -> None:
    """SGLang's process-wide server arguments, as a scheduler would set them; a dummy model
    cannot supply the mamba chunk size, so it is preset (max(FLA chunk, page size))."""
    server_args = _mod("sglang.srt.server_args")
    args = server_args.ServerArgs(model_path="dummy", page_size=page_size)
    chunk = _mod("sglang.kernels.ops.attention.fla.chunk_delta_h").CHUNK_SIZE
    args._mamba_cache_chunk_size = max(int(chunk), page_size)
    server_args.set_global_server_args_for_scheduler(args)


def build(shape: BenchShape, longest: int, backend: str) -> SGLangParts:
    """A fresh UnifiedRadixCache (LRU) for ``shape``; ``backend`` is the tree core asked
    for through ``SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND``, and must be the one selected."""
    if os.environ.get("SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND") != backend:
        raise RuntimeError("SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND must be set before import")
    _server_args(shape.page_size)
    torch = _mod("torch")
    component = _mod("sglang.srt.mem_cache.unified_cache.components.base").ComponentType
    components = {"full": (component.FULL,), "full+swa": (component.FULL, component.SWA),
                  "full+mamba": (component.FULL, component.MAMBA)}[shape.components]
    rows, _kv, allocator = _pools(shape, torch.bfloat16, longest + 10)
    params = _mod("sglang.srt.mem_cache.cache_init_params").CacheInitParams(
        req_to_token_pool=rows, token_to_kv_pool_allocator=allocator,
        page_size=shape.page_size, disable=False,
        sliding_window_size=SWA_WINDOW if shape.components == "full+swa" else None,
        tree_components=components, eviction_policy="lru")
    tree = _mod("sglang.srt.mem_cache.unified_radix_cache").UnifiedRadixCache(params=params)
    core = type(tree.tree_core)
    selected = str(tree._tree_core_backend)
    if selected != backend:
        raise RuntimeError(f"asked for the {backend} tree core, SGLang selected {selected}")
    return SGLangParts(tree, allocator, rows, api(), selected,
                       f"{core.__module__}.{core.__qualname__}")
