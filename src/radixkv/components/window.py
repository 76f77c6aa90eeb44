"""What the windowed components (SWA, chunked local attention) share: a prefix needs only a
suffix of its tokens (from :meth:`Component.window_start`), so internal nodes may lose their
values (tombstones), a lock pins only the nodes covering the window, and a request hands back
the slots that left its window before it finishes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.node import Node
from ..errors import InvalidSlotsError
from .base import Adoption, Component, PathAdoption, per_token_adoption, per_token_path_adoption


@dataclass(frozen=True, slots=True)
class WindowInput:
    """Insert input of a windowed component: slots aligned to the key, of which the caller
    still holds those at positions ``>= dropped`` (a page boundary); the tokens before it
    already left the request's window and are inserted as tombstones where the tree has
    nothing."""

    slots: np.ndarray
    dropped: int


class WindowedComponent(Component):
    """Base of per-token components whose prefixes need only ``[window_start(L), L)``.

    - lock: pins only the nodes covering ``[window_start(end), end)`` (at least the node the
      prefix ends in);
    - candidate: any node holding a value, if unlocked (internal nodes become tombstones);
    - a leaf is useless when no prefix ending in it can be served from its tombstone;
    - insert input: :class:`WindowInput`; revival fills tombstones with the caller's slots.
    """

    whole_when_complete = True
    pins_window = True
    lost_reason = "tombstone"

    def token_input(self, slots: np.ndarray, dropped: int) -> object:
        return WindowInput(slots, dropped)

    def lock_boundary(self, node: Node, end: int) -> int:
        target = self.window_start(end)
        current = node
        while current.parent is not None and current.start > target:
            current = current.parent
        return current.start if current.parent is not None else 0

    def useless_leaf(self, node: Node) -> bool:
        return node.values[self.index] is None

    def is_candidate(self, node: Node) -> bool:
        return node.values[self.index] is not None and node.parent is not None

    def check_input(self, data: object, length: int) -> None:
        if not isinstance(data, WindowInput):
            raise InvalidSlotsError(
                f"{self.name} input must be a WindowInput, got {type(data).__name__}")
        super().check_input(data.slots, length)
        if data.dropped < 0 or data.dropped % self.page_size:
            raise InvalidSlotsError(
                f"{self.name} dropped {data.dropped} is not a page boundary")

    def insert_limit(self, data: object, length: int, borrowed: int) -> int:
        assert isinstance(data, WindowInput)
        # a new tail that already left the window is a tombstoned leaf no match can end in
        # (unless the window at its end is empty)
        if data.dropped < length or self.window_start(length) >= length:
            return length
        return min(borrowed, length)

    def cut_points(self, data: object, limit: int, borrowed: int) -> Iterable[int]:
        assert isinstance(data, WindowInput)
        return (data.dropped,) if borrowed < data.dropped < limit else ()

    def adopt(self, node: Node, data: object, borrowed: int) -> Adoption:
        assert isinstance(data, WindowInput)
        held_from = max(borrowed, data.dropped)
        return per_token_adoption(node, node.values[self.index], data.slots, held_from)

    adopts_past_borrowed = True  # per_token_path_adoption from max(borrowed, dropped)

    def adopt_path(self, path: Sequence[Node], data: object, borrowed: int) -> PathAdoption:
        assert isinstance(data, WindowInput)
        held_from = max(borrowed, data.dropped)
        return per_token_path_adoption(path, self.index, data.slots, held_from)
