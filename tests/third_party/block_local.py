"""A third-party attention type, written as a user of radixkv would: only public names.

Block-local attention with one block of look-back (the causal form of the local 1-D
attention of the Image Transformer, and of the sliding block window of block-sparse
models): positions ``[kB, (k+1)B)`` form block k, and the token at position p attends to
every earlier token of its own block and of the block before it. So a prefix of length L
(the next token sits at position L, in block ``L // B``) needs the KV of
``[max(0, (L // B - 1) * B), L)``: never an empty window, unlike chunked local attention,
and always at least ``min(L, B)`` tokens, unlike a sliding window of B.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from radixkv import (
    CacheShape,
    ComponentSpec,
    Node,
    PoolShape,
    WindowedComponent,
    errors,
    register_component,
)


@dataclass(frozen=True)
class BlockLocal(ComponentSpec):
    """Block-local attention over blocks of ``block`` tokens with one block of look-back;
    ``capacity`` KV slots (default: as many as FULL)."""

    name: ClassVar[str] = "block_local"
    windowed: ClassVar[bool] = True
    block: int
    capacity: int | None = None

    def validate(self, shape: CacheShape) -> None:
        if isinstance(self.block, bool) or not isinstance(self.block, int) or self.block < 1:
            raise errors.ConfigError(f"block must be an int >= 1, got {self.block!r}")
        if self.capacity is not None and self.capacity % shape.page_size:
            raise errors.ConfigError(f"capacity {self.capacity} is not whole pages")

    def pool(self, shape: CacheShape) -> PoolShape:
        capacity = shape.capacity if self.capacity is None else self.capacity
        return PoolShape(capacity, shape.page_size)


class BlockLocalComponent(WindowedComponent):
    """The tree's view of :class:`BlockLocal`: a windowed component (locks pin the window,
    tombstones anywhere, revival on insert) whose window is the current and the previous
    block; a leaf without its value is useless (the window is never empty)."""

    def __init__(self, spec: BlockLocal) -> None:
        super().__init__(spec)
        self.block = spec.block

    def window_start(self, length: int) -> int:
        return max(0, length - length % self.block - self.block)

    def usable_length(self, path: Sequence[Node], length: int) -> int:
        # Below a tombstone's start is the next candidate: any longer prefix either has a
        # position of the tombstone in its window or ends inside it (windows only grow).
        index, end = self.index, length
        while end > 0:
            tomb = next((node for node in reversed(path)
                         if node.start < end and node.values[index] is None), None)
            if tomb is None or tomb.end <= self.window_start(end):
                return end
            end = tomb.start
        return 0


register_component(BlockLocal, BlockLocalComponent)
