"""The component interface: what one attention type's per-node value means.

The tree calls these hooks and never asks which kind of component it talks to. A component is
told its index in the tree's component list; ``node.values[index]`` and ``node.locks[index]``
are its own. Hooks are pure unless they say otherwise; each costs O(1) or O(path depth).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from ..core.node import Node
from ..errors import InvariantError


class Component(ABC):
    """One attention type's view of the tree."""

    kind: ClassVar[str]
    """Short name, e.g. ``"full"``; used in stats and error messages."""

    publishes_events: ClassVar[bool] = False
    """Whether storing/removing this component's values emits KV events."""

    def __init__(self) -> None:
        self.index = 0

    def bind(self, index: int) -> None:
        """Called once by the tree: this component's slot in ``node.values``/``node.locks``."""
        self.index = index

    @abstractmethod
    def usable_length(self, path: Sequence[Node], length: int) -> int:
        """Largest prefix length ``L <= length`` this component accepts.

        ``path`` lists the nodes (root excluded) that cover ``[0, length)``, top-down.
        """

    @abstractmethod
    def lock_boundary(self, node: Node) -> int:
        """Key position where pinning stops when a lock ends at ``node``.

        A lock pins ``node`` and its ancestors whose ``start`` is at least this position; 0
        pins the whole path. Splits keep this exact: the upper half keeps the original start.
        """

    @abstractmethod
    def is_candidate(self, node: Node) -> bool:
        """Whether ``node`` may be evicted for this component right now."""

    @abstractmethod
    def removes_node(self, node: Node) -> bool:
        """Whether evicting this component's value from ``node`` removes the node whole."""

    def value_size(self, node: Node) -> int:
        """Ledger size of the value on ``node`` (tokens for per-token values)."""
        return node.length

    def split_value(
        self, value: np.ndarray | None, upper_length: int
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Split a node's value for a split after ``upper_length`` elements: (upper, lower).

        Per-token values are sliced (views, no copy).
        """
        if value is None:
            return None, None
        return value[:upper_length], value[upper_length:]

    def check_node(self, node: Node) -> None:
        """Raise :class:`InvariantError` if ``node``'s value is malformed for this component."""
        value = node.values[self.index]
        if value is not None and len(value) != node.length:
            raise InvariantError(
                f"{self.kind} value of node {node.id} has {len(value)} slots for "
                f"{node.length} key elements"
            )
