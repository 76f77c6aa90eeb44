"""The resident pages of a cache as BlockStored events, parents first (for republishing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.events import BlockStored
from ..core.hashing import event_ids, page_digests
from ..core.keys import unpack_tokens

if TYPE_CHECKING:
    from ..cache.base import CacheBase
    from ..core.node import Node


def resident_pages(cache: CacheBase) -> Iterator[BlockStored]:
    """One BlockStored per node whose value of a publishing component (FULL, by default)
    is held, walking each namespace's tree depth-first so every parent comes before its
    children. A subtree under a node that holds no such value is skipped: its pages would
    name a parent the router was never told about. Cost: O(nodes) plus one page hash per
    page not hashed yet."""
    tree = cache.tree
    indices = [i for i, component in enumerate(tree.components) if component.publishes_events]
    if not indices:
        return
    index = indices[0]
    page_bytes, hasher = tree.page_bytes, tree.log.hasher
    bigram = tree.config.bigram
    medium = tree.config.medium
    for root in list(tree.roots.values()):
        stack: list[tuple[Node, int | None]] = [
            (child, None) for child in reversed(list(root.children.values()))
        ]
        while stack:
            node, parent_hash = stack.pop()
            if not tree.has(node, index):
                continue
            hashes = event_ids(page_digests(node, page_bytes, hasher), hasher)
            if not hashes:
                continue
            yield BlockStored(
                block_hashes=hashes,
                parent_block_hash=parent_hash,
                token_ids=unpack_tokens(node.key, bigram),
                block_size=tree.page_size,
                medium=medium,
                namespace=node.namespace,
            )
            stack.extend((child, hashes[-1]) for child in reversed(list(node.children.values())))
