"""FULL attention: one KV slot per token, every token of a prefix must be on device."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.node import Node
from .base import Adoption, Component, PathAdoption, per_token_adoption, per_token_path_adoption


class FullComponent(Component):
    """Full-attention KV (spec :class:`FullAttention`).

    - usable: a prefix of length L needs a device value on every token in [0, L);
    - lock: pins the whole path to the root;
    - candidate: a device leaf — it holds a value and no child holds one (if unlocked);
    - evicting the value removes the node, unless a descendant is still held (lower tier);
    - insert input: a slot array aligned to the key.
    """

    publishes_events = True
    lost_reason = "evicted"
    whole_when_complete = True
    pins_whole_path = True
    leaf_candidates = True
    adopts_past_borrowed = True  # per_token_path_adoption: nothing ends at or before it

    def usable_length(self, path: Sequence[Node], length: int) -> int:
        index = self.index
        for node in path:
            if node.values[index] is None:
                return min(node.start, length)
        return length

    def lock_boundary(self, node: Node, end: int) -> int:
        return 0

    def is_candidate(self, node: Node) -> bool:
        index = self.index
        if node.values[index] is None or node.parent is None:
            return False
        # bench insert: a loop, no generator frame
        for child in node.children.values():  # noqa: SIM110
            if child.values[index] is not None:
                return False
        return True

    def removes_node(self, node: Node) -> bool:
        return not node.children

    def adopt(self, node: Node, data: object, borrowed: int) -> Adoption:
        assert isinstance(data, np.ndarray)
        return per_token_adoption(node, node.values[self.index], data, borrowed)

    def adopt_path(self, path: Sequence[Node], data: object, borrowed: int) -> PathAdoption:
        assert isinstance(data, np.ndarray)
        return per_token_path_adoption(path, self.index, data, borrowed)
