"""KV rows between vLLM's paged KV cache and the connector's row buffer, for any layout
within a block.

A paged KV cache keeps each layer's blocks one after another, but how a block's memory holds
its tokens is the attention kernel's business (vLLM 0.32's CPU kernel, for one, keeps a
head's keys transposed, ``[head_size][block_size]``, and its values ``[block_size]
[head_size]``). So the layout is not assumed: :func:`probe_element_map` asks the engine's own
KV write to fill a scratch block with each element's index, spelled one bit per write, and
reads back where every key and value element of every token offset landed. A layout the probe
cannot read (elements written twice or never, values changed) raises ``ValueError``.

One row holds a token's whole KV: ``(layers, 2 * kv_heads * head_size)``, every layer's key
(head by head) then value, so rows of one model are alike whatever the kernel's layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch  # type: ignore[import-not-found, unused-ignore]

__all__ = ["PagedKV", "probe_element_map"]

BlockWriter = Callable[[Any, Any, Any], None]
"""``write(block, key, value)``: the engine's KV write of ``key`` and ``value`` (each
``(block_size, kv_heads, head_size)``) at offsets ``0 .. block_size-1`` of ``block`` (a
one-block cache of the engine's per-layer shape)."""


def probe_element_map(write: BlockWriter, block_shape: Sequence[int], dtype: Any,
                      block_size: int, heads: int, head_size: int) -> Any:
    """Where the engine's ``write`` puts each token's KV inside a block of ``block_shape``
    (a layer's cache shape without its first, block, dimension): an int64 tensor
    ``(block_size, 2 * heads * head_size)`` of element offsets in the flattened block, a
    token offset's key elements then its value elements."""
    elements = 1
    for size in block_shape:
        elements *= int(size)
    count = block_size * heads * head_size
    ids = torch.arange(2 * count, dtype=torch.int64)
    code = torch.zeros(elements, dtype=torch.int64)
    for bit in range((2 * count - 1).bit_length()):
        block = torch.full((1, *block_shape), -1, dtype=dtype)
        digits = ((ids >> bit) & 1).to(dtype)
        write(block, digits[:count].reshape(block_size, heads, head_size),
              digits[count:].reshape(block_size, heads, head_size))
        flat = block.reshape(-1)
        if not bool(((flat == 0) | (flat == 1)).all()):
            raise ValueError("radixkv: the KV cache layout probe found elements the engine's "
                             "write leaves unset or transforms")
        code |= flat.to(torch.int64) << bit
    if not torch.equal(torch.sort(code).values, ids):
        raise ValueError("radixkv: the KV cache layout probe found elements written twice "
                         "or never")
    where = torch.empty_like(code)
    where[code] = torch.arange(elements, dtype=torch.int64)
    keys = where[:count].reshape(block_size, -1)
    values = where[count:].reshape(block_size, -1)
    return torch.cat([keys, values], dim=1)


class PagedKV:
    """Token reads and writes on per-layer paged KV caches (``caches``: contiguous tensors
    of one shape and dtype, blocks along the first dimension), through ``element_map`` (from
    :func:`probe_element_map`). Raises ``ValueError`` for caches that do not fit it."""

    def __init__(self, caches: Sequence[Any], block_size: int, element_map: Any) -> None:
        if not caches:
            raise ValueError("radixkv: vLLM registered no KV cache tensors")
        first = caches[0]
        for cache in caches:
            if cache.shape != first.shape or cache.dtype != first.dtype \
                    or not cache.is_contiguous():
                raise ValueError("radixkv: the layers' KV caches differ in shape or dtype, "
                                 "or are not contiguous")
        blocks = int(first.shape[0])
        if element_map.shape[0] != block_size or first.numel() % blocks or \
                int(element_map.max()) >= first.numel() // blocks:
            raise ValueError(f"radixkv: the element map {tuple(element_map.shape)} does not "
                             f"fit KV caches of shape {tuple(first.shape)}")
        self.block_size = block_size
        self.dtype = first.dtype
        self.row_shape = (len(caches), int(element_map.shape[1]))
        self._map = element_map
        self._blocks = [cache.view(blocks, -1) for cache in caches]

    def read(self, slots: Any) -> Any:
        """The rows of vLLM ``slots`` (an int64 tensor): ``(len(slots), *row_shape)``."""
        block, where = self._where(slots)
        out = torch.empty((len(slots), *self.row_shape), dtype=self.dtype)
        for layer, cache in enumerate(self._blocks):
            out[:, layer] = cache[block, where]
        return out

    def write(self, slots: Any, rows: Any) -> None:
        """Write ``rows`` (``(len(slots), *row_shape)``) into vLLM ``slots``."""
        block, where = self._where(slots)
        for layer, cache in enumerate(self._blocks):
            cache[block, where] = rows[:, layer]

    def _where(self, slots: Any) -> tuple[Any, Any]:
        return (slots // self.block_size).unsqueeze(1), self._map[slots % self.block_size]
