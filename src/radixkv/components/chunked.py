"""Chunked local attention (as in Llama 4's local layers): one KV slot per token, and a token
attends only to the earlier tokens of its own chunk."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.node import Node
from .spec import ChunkedLocal
from .window import WindowedComponent


class ChunkedLocalComponent(WindowedComponent):
    """Chunked local attention KV with chunks of C tokens (spec :class:`ChunkedLocal`).

    Positions ``[kC, (k+1)C)`` form chunk k; the token at position p attends to the tokens
    of ``[p - p mod C, p]``. So, for a prefix of length L:

    - usable: every token in ``[L - L mod C, L)`` has a live value. At a chunk boundary
      (``L mod C == 0``) the window is empty: any prefix of whole chunks is usable whatever
      its tombstones;
    - window start of L: ``L - L mod C``; a request frees its own slots of finished chunks;
    - lock: pins the nodes covering ``[L - L mod C, L)``, and always the node L ends in;
    - eviction: any unlocked node holding a value may lose it (a tombstone); an unlocked
      leaf that lost it is removed unless a chunk boundary lies in ``(start, end]`` (a
      prefix ending there is still usable);
    - revival: an insert fills tombstones with the request's live slots, as for SWA.
    """

    def __init__(self, spec: ChunkedLocal) -> None:
        super().__init__(spec)
        self.chunk = spec.chunk

    def window_start(self, length: int) -> int:
        return length - length % self.chunk

    def usable_length(self, path: Sequence[Node], length: int) -> int:
        index, chunk, end = self.index, self.chunk, length
        while end > 0:
            start = end - end % chunk
            if start == end:  # an empty window
                return end
            tomb = None
            for node in reversed(path):
                if node.start < end and node.values[index] is None:
                    tomb = node
                    break
            if tomb is None or tomb.end <= start:
                return end
            if tomb.start < start:  # the chunk boundary inside the tombstone needs nothing
                return start
            end = tomb.start
        return 0

    def useless_leaf(self, node: Node) -> bool:
        if node.values[self.index] is not None:
            return False
        return node.end - node.end % self.chunk <= node.start
