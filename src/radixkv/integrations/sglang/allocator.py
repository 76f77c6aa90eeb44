"""SGLang's token-to-KV allocator seen as radixkv's :class:`~radixkv.memory.SlotAllocator`.

SGLang 0.5.23's ``TokenToKVPoolAllocator`` (page size 1) hands out slots ``1 .. size`` and
``PagedTokenToKVPoolAllocator`` pages ``1 .. size // page_size`` (page ``k`` = slots
``k*p .. k*p+p-1``); slot 0 / page 0 is the padding slot, never handed out. So the id space
radixkv sees is ``(size // page_size + 1) * page_size`` slots, and the padding page simply
never appears. ``alloc`` returns an int64 torch tensor on the pool's device; ``free`` takes
one and (paged) frees ``unique(index // page_size)``, i.e. whole pages.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import torch  # type: ignore[import-not-found, unused-ignore]

__all__ = ["SGLangSlotAllocator"]

Int64Array = npt.NDArray[np.int64]


class SGLangSlotAllocator:
    """Wraps SGLang's ``token_to_kv_pool_allocator``; converts torch <-> numpy at the edge.

    Every slot the radixkv tree stores is then an SGLang KV index, and what the cache frees
    (duplicates, evictions, ``reset``) goes back through SGLang's ``free``.
    """

    __slots__ = ("_allocator", "_capacity", "_device", "_page_size")

    def __init__(self, allocator: Any) -> None:
        page_size = int(allocator.page_size)
        if page_size <= 0:
            raise ValueError(f"SGLang allocator page_size must be > 0, got {page_size}")
        self._allocator = allocator
        self._page_size = page_size
        self._capacity = capacity_of(int(allocator.size), page_size)
        self._device = allocator.device

    @property
    def page_size(self) -> int:
        return self._page_size

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def available(self) -> int:
        return int(self._allocator.available_size())

    @property
    def device(self) -> Any:
        """The device of SGLang's KV indices (where ``free`` wants its tensor)."""
        return self._device

    def alloc(self, num_slots: int) -> Int64Array | None:
        """``num_slots`` slots (whole pages) from SGLang, or ``None`` when it is short."""
        taken = self._allocator.alloc(int(num_slots))
        if taken is None:
            return None
        return to_numpy(taken)

    def free(self, slots: npt.NDArray[np.integer[Any]]) -> None:
        """Give whole pages back to SGLang (each once: radixkv guarantees it)."""
        if len(slots):
            self._allocator.free(to_torch(slots, self._device))


def capacity_of(size: int, page_size: int) -> int:
    """Slot id space of an SGLang allocator of ``size`` tokens: its pages plus page 0."""
    return (size // page_size + 1) * page_size


def to_numpy(indices: Any) -> Int64Array:
    """A torch index tensor (any device, any int dtype) as a fresh numpy int64 array."""
    array: Int64Array = indices.detach().to("cpu", torch.int64).numpy().copy()
    return array


def to_torch(slots: npt.NDArray[np.integer[Any]], device: Any) -> Any:
    """Numpy slot ids as an int64 torch tensor on ``device``."""
    host = torch.from_numpy(np.ascontiguousarray(slots, dtype=np.int64))
    return host.to(device)
