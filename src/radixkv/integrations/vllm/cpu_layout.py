"""vLLM 0.32's CPU attention backend (``CPU_ATTN``) as radixkv's :class:`~.rows.PagedKV`.

Each layer's cache is ``(num_blocks, kv_heads, block_size, 2 * head_size)``; the backend
splits a block into a key half and a value half and writes tokens with
``cpu_attn_reshape_and_cache`` in a layout chosen by the layer's ISA (``vec``, ``vec16``,
``amx``...). That very op, with the layer's ISA, fills the layout probe's scratch block, so
the rows read and written here are exactly what the kernel wrote and will read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch  # type: ignore[import-not-found, unused-ignore]
from vllm import _custom_ops as ops  # type: ignore[import-not-found, unused-ignore]

from radixkv.integrations.vllm.rows import BlockWriter, PagedKV, probe_element_map

__all__ = ["DTYPES", "cpu_block_writer", "cpu_paged_kv"]

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
"""KV cache dtypes supported (fp8 caches are stored scaled, and refused)."""


def cpu_paged_kv(kv_caches: Mapping[str, Any], layers: Mapping[str, Any],
                 block_size: int) -> PagedKV:
    """The ``PagedKV`` of vLLM's registered ``kv_caches`` (layer name -> tensor), whose
    attention modules ``layers`` (vLLM's static forward context) name the backend and ISA.
    Raises ``ValueError`` for another backend, dtype or shape."""
    if not kv_caches:
        raise ValueError("radixkv: vLLM registered no KV cache tensors")
    name, first = next(iter(kv_caches.items()))
    layer = layers.get(name)
    backend = getattr(getattr(layer, "attn_backend", None), "get_name", lambda: None)()
    isa = getattr(layer, "isa", None)
    if backend != "CPU_ATTN" or not isinstance(isa, str):
        raise ValueError(f"radixkv: attention backend {backend!r} (ISA {isa!r}); the KV "
                         "connector supports vLLM's CPU backend, CPU_ATTN")
    shape = tuple(first.shape)
    if len(shape) != 4 or shape[2] != block_size or shape[3] % 2 or first.dtype not in DTYPES:
        raise ValueError(f"radixkv: a KV cache of shape {shape} and dtype {first.dtype}; "
                         f"expected (blocks, kv_heads, {block_size}, 2 * head_size) in "
                         "float32, float16 or bfloat16")
    element_map = probe_element_map(cpu_block_writer(isa, block_size), shape[1:], first.dtype,
                                    block_size, shape[1], shape[3] // 2)
    return PagedKV(list(kv_caches.values()), block_size, element_map)


def cpu_block_writer(isa: str, block_size: int) -> BlockWriter:
    """The CPU backend's KV write into a one-block cache, as the layer of ISA ``isa`` does
    it: the block split into its key and value halves, tokens at offsets ``0 ..
    block_size-1``."""
    slots = torch.arange(block_size, dtype=torch.int64)

    def write(block: Any, key: Any, value: Any) -> None:
        _, heads, size, width = block.shape
        keys, values = block.view(1, heads, 2 * size, width // 2).chunk(2, dim=2)
        ops.cpu_attn_reshape_and_cache(key.contiguous(), value.contiguous(), keys, values,
                                       slots, isa, 1.0, 1.0, "auto")

    return write
