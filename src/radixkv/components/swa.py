"""SWA: sliding-window attention KV, one slot per token, only the last W tokens matter."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.node import Node
from ..errors import InvalidSlotsError
from .base import Adoption, Component, PathAdoption, per_token_adoption, per_token_path_adoption


@dataclass(frozen=True, slots=True)
class WindowInput:
    """SWA insert input: slots aligned to the key, of which the caller still holds those at
    positions ``>= live_from`` (a page boundary); the tokens before it already left the
    request's window and are inserted as tombstones where the tree has nothing."""

    slots: np.ndarray
    live_from: int


class SlidingWindowComponent(Component):
    """Sliding-window attention KV with window ``window`` tokens.

    - usable: a prefix of length L needs a live value on every token in [max(0, L-W), L);
    - lock: pins only the nodes covering the last W tokens of the prefix;
    - candidate: any node holding a value, if unlocked (internal nodes become tombstones);
    - evicting the value of an unlocked leaf removes it whole;
    - insert input: :class:`WindowInput`.
    """

    kind = "swa"
    whole_when_complete = True

    def __init__(self, window: int) -> None:
        super().__init__()
        self.window = window

    def usable_length(self, path: Sequence[Node], length: int) -> int:
        index, window, end = self.index, self.window, length
        while end > 0:
            tomb = None
            for node in reversed(path):
                if node.start < end and node.values[index] is None:
                    tomb = node
                    break
            if tomb is None or (tomb.end <= end and end - tomb.end >= window):
                return end
            end = tomb.start
        return 0

    def lock_boundary(self, node: Node, end: int) -> int:
        target = max(0, end - self.window)
        current = node
        while current.parent is not None and current.start > target:
            current = current.parent
        return current.start if current.parent is not None else 0

    def useless_leaf(self, node: Node) -> bool:
        return node.values[self.index] is None

    def is_candidate(self, node: Node) -> bool:
        index = self.index
        return node.values[index] is not None and node.parent is not None

    def check_input(self, data: object, length: int) -> None:
        if not isinstance(data, WindowInput):
            raise InvalidSlotsError(f"swa input must be a WindowInput, got {type(data).__name__}")
        super().check_input(data.slots, length)
        if data.live_from < 0 or data.live_from % self.page_size:
            raise InvalidSlotsError(f"swa live_from {data.live_from} is not a page boundary")

    def insert_limit(self, data: object, length: int, borrowed: int) -> int:
        assert isinstance(data, WindowInput)
        # a new tail that already left the window is a tombstoned leaf no match can end in
        return length if data.live_from < length else min(borrowed, length)

    def cut_points(self, data: object, limit: int, borrowed: int) -> Iterable[int]:
        assert isinstance(data, WindowInput)
        return (data.live_from,) if borrowed < data.live_from < limit else ()

    def adopt(self, node: Node, data: object, borrowed: int) -> Adoption:
        assert isinstance(data, WindowInput)
        held_from = max(borrowed, data.live_from)
        return per_token_adoption(node, node.values[self.index], data.slots, held_from)

    def adopt_path(self, path: Sequence[Node], data: object, borrowed: int) -> PathAdoption:
        assert isinstance(data, WindowInput)
        held_from = max(borrowed, data.live_from)
        return per_token_path_adoption(path, self.index, data.slots, held_from)
