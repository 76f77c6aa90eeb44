"""Why a prompt did not hit: tokens the tree holds structurally but no request could use,
attributed to the component that cut them.

The tree's match already knows how far the prompt runs along the tree (``branch``) and how
much of that every component accepts (``length``). Only when the two differ is anything
done here. If a single component can cut at all (FULL+MAMBA, or FULL+SWA while FULL has no
hole), the difference is its own: O(components). Otherwise, in O(depth), the cut path is
walked again to its structural end and the tree's fixpoint over the components is replayed
in tree order, each component charged with what it took off the candidate length. Tokens
the tree never held, and partial pages, are not counted per match: they are the remainder
``match_tokens - hit_tokens - lost - capped`` (see ``CacheStats.unseen_tokens``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..components.base import Component
from ..core.keys import Namespace
from ..core.node import Node
from ..core.tree import TreeCore
from ..core.types import TreeMatch


def structural_path(tree: TreeCore, found: TreeMatch, key: bytes,
                    namespace: Namespace) -> list[Node]:
    """The nodes ``key`` runs along up to ``found.branch``: ``found.path`` (cut at the usable
    length) followed on down. Pure; O(depth). The walk needs no compares: the match already
    established that the key follows the tree that far."""
    path = list(found.path)
    node = path[-1] if path else tree.roots.get(namespace)
    unit, page_bytes = tree.unit, tree.page_bytes
    pos, end = (0 if not path else path[-1].end * unit), found.branch * unit
    while node is not None and pos < end:
        node = node.children.get(key[pos : pos + page_bytes])
        if node is None:
            break
        path.append(node)
        pos += len(node.key)
    return path


def cut_by(components: Sequence[Component], path: Sequence[Node], structural: int) -> list[int]:
    """Per component (tree order), the key elements it took off ``structural`` on the way to
    the length every component accepts: the tree's fixpoint, replayed with a ledger."""
    lost = [0] * len(components)
    length = structural
    while True:
        candidate = length
        for index, component in enumerate(components):
            lowered = component.usable_length(path, candidate)
            lost[index] += candidate - lowered
            candidate = lowered
        if candidate == length:
            return lost
        length = candidate


def count_lost(lost: list[int], tree: TreeCore, found: TreeMatch, key: bytes,
               namespace: Namespace) -> None:
    """Add to ``lost`` what each component cut from ``found`` (call only when
    ``found.length < found.branch``). When only one component can cut at all (it is never
    whole, or has holes; the others accept any length), all of it is that one's: O(1)."""
    holes = tree.holes
    cutters = [c.index for c in tree.components if holes[c.index] or not c.whole_when_complete]
    if len(cutters) == 1:
        lost[cutters[0]] += found.branch - found.length
        return
    path = structural_path(tree, found, key, namespace)
    for index, cut in enumerate(cut_by(tree.components, path, found.branch)):
        lost[index] += cut
