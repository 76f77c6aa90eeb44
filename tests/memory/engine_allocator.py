"""A strict engine-side KV allocator for the engine-owned-slot tests: shaped like SGLang's
paged allocator (page 0 is padding and never handed out; pages come from a free list), and
it refuses, by raising, any free that is not of pages it handed out and still counts as
allocated, so a slot given back twice or never handed out fails the test at once."""

from __future__ import annotations

import numpy as np


class StrictEngineAllocator:
    """Pages ``1 .. capacity/page_size - 1`` on a FIFO free list; ``freed`` records every
    slot given back, in order."""

    def __init__(self, capacity: int, page_size: int) -> None:
        self.page_size, self.capacity = page_size, capacity
        self.free_list = list(range(1, capacity // page_size))
        self.allocated: set[int] = set()
        self.freed: list[int] = []
        self.frees = 0

    @property
    def available(self) -> int:
        return len(self.free_list) * self.page_size

    def alloc(self, num_slots: int) -> np.ndarray | None:
        assert num_slots % self.page_size == 0, "the cache asks for whole pages"
        count = num_slots // self.page_size
        if count > len(self.free_list):
            return None
        pages, self.free_list = self.free_list[:count], self.free_list[count:]
        self.allocated.update(pages)
        return self.slots(pages)

    def free(self, slots: np.ndarray) -> None:
        page = self.page_size
        assert len(slots) % page == 0, f"{len(slots)} slots are not whole pages"
        pages = [int(s) // page for s in slots[::page]]
        expected = self.slots(pages) if pages else np.zeros(0, dtype=np.int64)
        assert np.array_equal(np.asarray(slots), expected), "not whole aligned pages"
        assert len(set(pages)) == len(pages), "a page given back twice in one call"
        stray = [p for p in pages if p not in self.allocated]
        assert not stray, f"pages {stray} given back but not allocated (double free?)"
        self.allocated.difference_update(pages)
        self.free_list.extend(pages)
        self.freed.extend(int(s) for s in slots)
        self.frees += 1

    def slots(self, pages: list[int]) -> np.ndarray:
        offsets = np.arange(self.page_size, dtype=np.int64)
        return (np.asarray(pages, dtype=np.int64)[:, None] * self.page_size
                + offsets).reshape(-1)
