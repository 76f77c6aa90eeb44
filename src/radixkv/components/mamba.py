"""MAMBA: a recurrent state checkpoint (one state slot) at the end of a node."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..core.node import Node
from ..errors import InvalidSlotsError, InvariantError
from .base import Adoption, Component
from .spec import Mamba


class MambaComponent(Component):
    """State-space (Mamba) recurrent state (spec :class:`Mamba`).

    - usable: a prefix of length L needs a state exactly at L (L = 0 needs none);
    - lock: pins only the node whose end holds the state;
    - candidate: any node holding a state, if unlocked; an unlocked leaf losing it is
      removed;
    - split: the state stays with the lower half (it describes the end);
    - insert input: ``{position: state slot}`` at page boundaries; the tree caches the key
      only up to the last checkpoint, since nothing after it could ever be matched.
    """

    per_token = False
    lost_reason = "no_state"
    pins_end_node = True

    def __init__(self, spec: Mamba) -> None:
        super().__init__(spec)
        self.track_interval = spec.track_interval

    def checkpoint_hints(self, length: int, branch: int, num_tokens: int) -> tuple[int, ...]:
        """Every track interval past the match, the branch point (the next request sharing
        this prefix branches there too), and the prompt's last page boundary."""
        page, interval = self.page_size, self.track_interval
        end = num_tokens - num_tokens % page
        hints = set(range(length - length % interval + interval, end + 1, interval))
        if length < branch < end:
            hints.add(branch)
        if end > length:
            hints.add(end)
        return tuple(sorted(hints))

    def usable_length(self, path: Sequence[Node], length: int) -> int:
        index = self.index
        for node in reversed(path):
            end = node.start + node.length  # bench match_prefix: no property call
            if end <= length and node.values[index] is not None:
                return end
        return 0

    def lock_boundary(self, node: Node, end: int) -> int:
        return node.start

    def useless_leaf(self, node: Node) -> bool:
        return node.values[self.index] is None

    def is_candidate(self, node: Node) -> bool:
        index = self.index
        return node.values[index] is not None and node.parent is not None

    def value_size(self, node: Node) -> int:
        return 1

    def split_value(
        self, value: np.ndarray | None, upper_length: int
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        return None, value

    def check_node(self, node: Node) -> None:
        value = node.values[self.index]
        if value is not None and len(value) != 1:
            raise InvariantError(f"mamba value of node {node.id} is not one state slot")

    def check_input(self, data: object, length: int) -> None:
        if not isinstance(data, dict):
            raise InvalidSlotsError(f"mamba input must be a dict, got {type(data).__name__}")
        for position, slot in data.items():
            if not isinstance(position, int) or not 0 < position <= length:
                raise InvalidSlotsError(f"checkpoint position {position!r} outside (0, {length}]")
            if position % self.page_size:
                raise InvalidSlotsError(f"checkpoint position {position} is not a page boundary")
            if not isinstance(slot, (int, np.integer)) or slot < 0:
                raise InvalidSlotsError(f"checkpoint state slot {slot!r} is not an int >= 0")

    def insert_limit(self, data: object, length: int, borrowed: int) -> int:
        assert isinstance(data, dict)
        positions: list[int] = [p for p in data if p <= length]
        return max([borrowed, *positions])

    def cut_points(self, data: object, limit: int, borrowed: int) -> Iterable[int]:
        assert isinstance(data, dict)
        return (position for position in data if position < limit)

    def adopt(self, node: Node, data: object, borrowed: int) -> Adoption:
        assert isinstance(data, dict)
        slot = data.get(node.end)
        if slot is None:
            return None, None
        state = np.array([slot], dtype=np.int64)
        return (state, None) if node.values[self.index] is None else (None, state)
