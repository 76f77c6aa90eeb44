"""ResidentIndex: what one engine's cache holds on device, rebuilt from its KV events only,
as a KV-aware router sees it (BlockStored adds pages, BlockRemoved drops them; events of
the host tier's medium are not about the device and are skipped)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .. import AllBlocksCleared, BlockRemoved, BlockStored
from .keys import PrefixIndex, namespace_salt, prefix_sums

HOST_MEDIUM = "CPU"
"""The medium the cache's host tier announces its pages on."""


class ResidentIndex:
    """The event stream of one cache turned into :class:`PrefixIndex` keys: each announced
    page is remembered by its event id with the running key sum and depth at its end, so a
    child page's keys continue its parent's."""

    def __init__(self, page: int) -> None:
        self.page = page
        self.index = PrefixIndex(page)
        self._pages: dict[int, tuple[int, int, int]] = {}  # event id -> (sum, depth, salt)

    def feed(self, events: Iterable[object]) -> None:
        for event in events:
            if getattr(event, "medium", None) == HOST_MEDIUM:
                continue  # the host tier's pages: not on device
            if isinstance(event, BlockStored):
                self._stored(event)
            elif isinstance(event, BlockRemoved):
                for block in event.block_hashes:
                    entry = self._pages.pop(block, None)
                    if entry is not None:
                        self.index.keys.discard(entry[0] ^ entry[2])
            elif isinstance(event, AllBlocksCleared):
                self._pages.clear()
                self.index.keys.clear()

    def _stored(self, event: BlockStored) -> None:
        if event.parent_block_hash is None:
            start, depth, salt = 0, 0, namespace_salt(event.namespace)
        else:
            parent = self._pages.get(event.parent_block_hash)
            if parent is None:  # its parent was never announced: nothing to chain from
                return
            start, depth, salt = parent
        tokens = np.asarray(event.token_ids, dtype=np.uint32)
        sums = prefix_sums(tokens, depth)[self.page - 1 :: self.page] + np.uint64(start)
        keys = (sums ^ np.uint64(salt)).tolist()
        self.index.add(keys)
        for offset, (block, raw) in enumerate(zip(event.block_hashes, sums.tolist())):
            self._pages[block] = (raw, depth + (offset + 1) * self.page, salt)

    def longest(self, keys: list[int], limit: int | None = None) -> int:
        return self.index.longest(keys, limit)
