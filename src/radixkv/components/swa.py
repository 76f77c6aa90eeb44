"""SWA: sliding-window attention KV, one slot per token, only the last W tokens matter."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.node import Node
from .spec import SlidingWindow
from .window import WindowedComponent, WindowInput

__all__ = ["SlidingWindowComponent", "WindowInput"]


class SlidingWindowComponent(WindowedComponent):
    """Sliding-window attention KV with window ``window`` tokens (spec :class:`SlidingWindow`).

    - usable: a prefix of length L needs a live value on every token in [max(0, L-W), L);
    - lock: pins only the nodes covering the last W tokens of the prefix;
    - window start of L: ``max(0, L - W)``; a request frees its slots before it;
    - candidate, tombstones, revival and insert input: see :class:`WindowedComponent`.
    """

    def __init__(self, spec: SlidingWindow) -> None:
        super().__init__(spec)
        self.window = spec.window

    def window_start(self, length: int) -> int:
        return max(0, length - self.window)

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
