"""The resident pages of a cache as BlockStored events, parents first (for republishing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.events import BlockStored
from ..core.hashing import event_ids, page_digests
from ..core.keys import unpack_tokens
from ..core.tiers import DEVICE, HOST

if TYPE_CHECKING:
    from ..cache.prefix_cache import PrefixCache
    from ..core.node import Node
    from ..core.tree import TreeCore

def resident_pages(cache: PrefixCache) -> Iterator[BlockStored]:
    """One BlockStored per node and tier on which it holds the value of a publishing
    component (FULL, by default): the device's medium, and with a host tier ``CPU`` for
    host values whose backup was acknowledged (one still in flight is announced at its
    acknowledgement, as usual). Each namespace's tree is walked depth-first, so on each
    medium every parent comes before its children; a node not announced on a medium hides
    its subtree there (its pages would name a parent the router was never told about). A
    host-only node appears on ``CPU`` only. Cost: O(nodes) plus one page hash per page not
    hashed yet."""
    tree = cache.tree
    indices = [i for i, component in enumerate(tree.components) if component.publishes_events]
    if not indices:
        return
    index = indices[0]
    page_bytes, hasher, bigram = tree.page_bytes, tree.log.hasher, tree.config.bigram
    media = [(tier.index, tier.medium) for tier in tree.tiers]
    for root in list(tree.roots.values()):
        stack: list[tuple[Node, int | None, tuple[int, ...]]] = [
            (child, None, tuple(tier for tier, _ in media))
            for child in reversed(list(root.children.values()))
        ]
        while stack:
            node, parent_hash, open_tiers = stack.pop()
            held = tuple(tier for tier in open_tiers if _announced(tree, node, index, tier))
            if not held:
                continue
            hashes = event_ids(page_digests(node, page_bytes, hasher), hasher)
            if not hashes:
                continue
            for tier, medium in media:
                if tier in held:
                    yield BlockStored(
                        block_hashes=hashes,
                        parent_block_hash=parent_hash,
                        token_ids=unpack_tokens(node.key, bigram),
                        block_size=tree.page_size,
                        medium=medium,
                        namespace=node.namespace,
                    )
            stack.extend((child, hashes[-1], held)
                         for child in reversed(list(node.children.values())))


def _announced(tree: TreeCore, node: Node, index: int, tier: int) -> bool:
    """Whether ``node``'s value of component ``index`` on ``tier`` was announced: held, and
    on the host not still being written by a backup in flight."""
    if not tree.has(node, index, tier):
        return False
    if tier == DEVICE or node.id not in tree.copying:
        return True
    return not any(record.tier == HOST and index in record.nodes[node.id][1]
                   for record in tree.copying[node.id])
