"""KV rows between vLLM's paged CPU KV cache and the connector's row buffer.

vLLM 0.32's CPU attention backend (``CPU_ATTN``) gives each layer one tensor of shape
``(num_blocks, num_kv_heads, block_size, 2 * head_size)`` whose memory, per block and head,
holds the block's ``block_size`` keys and then its ``block_size`` values: the backend reads
it as ``(num_blocks, num_kv_heads, 2 * block_size, head_size)`` and splits that in halves.
:class:`CPUPagedKV` reads and writes tokens through exactly that view.

One row holds a token's whole KV: ``(layers, 2 * num_kv_heads * head_size)``, every layer's
key then value, flattened; the row buffer is ``(rows, layers, width)`` in the cache's dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch  # type: ignore[import-not-found, unused-ignore]

__all__ = ["DTYPES", "CPUPagedKV"]

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
"""KV cache dtypes the copies support (fp8 caches are refused)."""


class CPUPagedKV:
    """Token reads and writes on vLLM's per-layer CPU KV caches. Raises ``ValueError``
    at construction for tensors that are not that layout (another attention backend)."""

    def __init__(self, caches: Sequence[Any], block_size: int) -> None:
        if not caches:
            raise ValueError("radixkv: vLLM registered no KV cache tensors")
        shape, dtype = tuple(caches[0].shape), caches[0].dtype
        problem = _layout_problem(caches, block_size, shape, dtype)
        if problem:
            raise ValueError(f"radixkv: unsupported vLLM KV cache layout: {problem}")
        blocks, heads, _, twice_head = shape
        self.block_size = block_size
        self.dtype = dtype
        self.key_width = heads * (twice_head // 2)
        self.row_shape = (len(caches), 2 * self.key_width)
        # (blocks, 2 * block_size, heads, head_size): a token is one (block, offset) pair
        self._views = [cache.view(blocks, heads, 2 * block_size, twice_head // 2)
                       .permute(0, 2, 1, 3) for cache in caches]

    def read(self, slots: Any) -> Any:
        """The rows of vLLM ``slots`` (an int64 tensor): ``(len(slots), *row_shape)``."""
        block, offset = slots // self.block_size, slots % self.block_size
        out = torch.empty((len(slots), *self.row_shape), dtype=self.dtype)
        split = self.key_width
        for layer, view in enumerate(self._views):
            out[:, layer, :split] = view[block, offset].reshape(len(slots), -1)
            out[:, layer, split:] = view[block, offset + self.block_size].reshape(len(slots), -1)
        return out

    def write(self, slots: Any, rows: Any) -> None:
        """Write ``rows`` (``(len(slots), *row_shape)``) into vLLM ``slots``."""
        block, offset = slots // self.block_size, slots % self.block_size
        split = self.key_width
        for layer, view in enumerate(self._views):
            shape = (len(slots), *view.shape[2:])
            view[block, offset] = rows[:, layer, :split].reshape(shape)
            view[block, offset + self.block_size] = rows[:, layer, split:].reshape(shape)


def _layout_problem(caches: Sequence[Any], block_size: int, shape: tuple[int, ...],
                    dtype: Any) -> str | None:
    if len(shape) != 4 or shape[2] != block_size or shape[3] % 2:
        return (f"a layer's tensor has shape {shape}; expected (blocks, kv_heads, "
                f"block_size={block_size}, 2 * head_size) as vLLM's CPU attention backend")
    if dtype not in DTYPES:
        return f"KV cache dtype {dtype} (supported: float32, float16, bfloat16)"
    for cache in caches:
        if tuple(cache.shape) != shape or cache.dtype != dtype or not cache.is_contiguous():
            return "the layers' tensors differ in shape or dtype, or are not contiguous"
        if cache.device.type != "cpu":
            return f"a tensor on {cache.device}; the CPU attention backend's are supported"
    return None
