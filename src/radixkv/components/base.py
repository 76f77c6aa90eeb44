"""The component interface: what one attention type's per-node value means.

The tree calls these hooks and never asks which kind of component it talks to. A component is
built from its spec (:mod:`radixkv.components.spec`) and bound by the tree: ``index`` is the
slot of ``node.values`` its rules read — its value on the tier this object is bound to (the
tree binds one view per tier, see :mod:`radixkv.core.tiers`; on the device tier, its position
in the component list) — and ``node.locks[index]`` its lock count (per component, on the
device view). Hooks are pure unless they say otherwise; each costs O(1) or O(path depth).

On insert each component receives its own *input* (FULL: a slot array aligned to the key;
SWA: :class:`WindowInput`; MAMBA: ``{position: state slot}``) and decides, node by node, what
the tree adopts and what goes back to the caller to be freed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import ClassVar

import numpy as np

from ..core.node import Node
from ..errors import InvalidSlotsError, InvariantError
from .request import RequestSide, StateSide, TokenSide
from .spec import ComponentSpec

Adoption = tuple[np.ndarray | None, np.ndarray | None]
"""(value the node takes, caller slots to free); either may be ``None``."""

PathAdoption = tuple[list[tuple[Node, np.ndarray]], np.ndarray]
"""(the nodes that take a value, with it; every caller slot to free, one array)."""

NO_SLOTS = np.zeros(0, dtype=np.int64)


class Component(ABC):
    """One attention type's view of the tree, built from its spec: ``Component(spec)``.

    ``name`` (the spec's) keys everything reported about it. ``per_token`` components hold
    one slot per token (a request allocates one per token it adds); the others hold one
    slot per value (a request allocates one working slot, and one per checkpoint it saves).
    """

    publishes_events: ClassVar[bool] = False
    """Whether storing/removing this component's values emits KV events."""

    whole_when_complete: ClassVar[bool] = False
    """True if, when no node lacks this component's value, it accepts every structural
    match (the tree then skips :meth:`usable_length`)."""

    pins_whole_path: ClassVar[bool] = False
    """True if :meth:`lock_boundary` is always 0 (the tree then skips the call)."""

    pins_end_node: ClassVar[bool] = False
    """True if :meth:`lock_boundary` is always the node's start: a lock pins only the node
    it ends in (the tree then skips the call and the walk)."""

    pins_window: ClassVar[bool] = False
    """True if :meth:`lock_boundary` is the start of the first node, going up from the
    lock's node, that starts at or before :meth:`window_start` of the lock's end (the tree
    then finds it while pinning, in one walk)."""

    lost_reason: ClassVar[str] = "cut"
    """What a prefix this component cuts short lost, in stats and metrics (FULL:
    ``evicted``, a window component: ``tombstone``, MAMBA: ``no_state``)."""

    adopts_past_borrowed: ClassVar[bool] = False
    """True if :meth:`adopt_path` takes nothing from, and returns no duplicate on, a node
    that ends at or before ``borrowed`` (the tree then leaves those nodes out of the path
    it passes)."""

    per_token: ClassVar[bool] = True
    """True if :meth:`value_size` is the node's length (the tree then skips the call)."""

    leaf_candidates: ClassVar[bool] = False
    """True if, while no node lacks this component's value, only nodes without children
    can be candidates (the tree then checks queue membership on the last node of a
    matched path only)."""

    def __init__(self, spec: ComponentSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.index = 0
        self.page_size = 1

    def bind(self, index: int, page_size: int) -> None:
        """Called once by the tree: this component's slot in ``node.values``/``node.locks``."""
        self.index = index
        self.page_size = page_size

    # ---------------------------------------------------------------- match and lock

    @abstractmethod
    def usable_length(self, path: Sequence[Node], length: int) -> int:
        """Largest prefix length ``L <= length`` this component accepts.

        ``path`` lists the nodes (root excluded) that cover ``[0, length)``, top-down. The
        tree combines components by iterating to the largest length all of them accept.
        """

    @abstractmethod
    def lock_boundary(self, node: Node, end: int) -> int:
        """Key position where pinning stops for a lock of the prefix ``[0, end)`` that ends
        in ``node``: the lock pins ``node`` and its ancestors whose ``start`` is at least this
        position (0 pins the whole path). Splits keep it exact: an upper half keeps the
        original start."""

    def window_start(self, length: int) -> int:
        """First key position whose value a prefix of ``length`` positions still needs from
        this component (0: all of them). Non-decreasing in ``length``. A request may free
        its own slots before it once it has computed ``length`` tokens; pure, O(1)."""
        return 0

    def checkpoint_hints(self, length: int, branch: int, num_tokens: int) -> tuple[int, ...]:
        """Positions where a request whose prompt of ``num_tokens`` matched ``length`` (and
        ran along the tree to ``branch``) should save values of this component while
        prefilling, so that later requests hit; sorted, pure (default: none)."""
        return ()

    # ---------------------------------------------------------------- request side

    def request_side(self) -> RequestSide:
        """How requests hold this component's slots (see :mod:`radixkv.components.request`):
        a :class:`TokenSide` for per-token components, else a :class:`StateSide`."""
        return TokenSide(self) if self.per_token else StateSide(self)

    def token_input(self, slots: np.ndarray, dropped: int) -> object:
        """The insert input of a per-token request's ``slots`` (aligned to the key), of which
        the caller holds those from ``dropped`` on (default: the slots themselves)."""
        return slots

    # ---------------------------------------------------------------- eviction

    @abstractmethod
    def is_candidate(self, node: Node) -> bool:
        """Whether ``node``'s structure makes it an eviction candidate for this component,
        locks aside (the evictor skips locked candidates)."""

    def removes_node(self, node: Node) -> bool:
        """Whether evicting this component's value from ``node`` removes the node whole
        (default: an unlocked leaf that lost it is useless)."""
        return not node.children and not any(node.locks)

    def useless_leaf(self, node: Node) -> bool:
        """Whether ``node``, as a leaf, can never end a usable prefix for this component (so
        eviction removes it whole once it becomes an unlocked leaf)."""
        return False

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
                f"{self.name} value of node {node.id} has {len(value)} slots for "
                f"{node.length} key elements"
            )

    # ---------------------------------------------------------------- insert

    def check_input(self, data: object, length: int) -> None:
        """Raise :class:`InvalidSlotsError` unless ``data`` is a valid input for a key of
        ``length`` elements (default: a slot array aligned to the key)."""
        if not isinstance(data, np.ndarray) or len(data) != length:
            size = len(data) if isinstance(data, np.ndarray) else type(data).__name__
            raise InvalidSlotsError(f"{self.name} slots: {size} for {length} key elements")

    def insert_limit(self, data: object, length: int, borrowed: int) -> int:
        """How much of a key of ``length`` elements this component lets the tree cache."""
        return length

    def cut_points(self, data: object, limit: int, borrowed: int) -> Iterable[int]:
        """Key positions where this input needs a node boundary."""
        return ()

    @abstractmethod
    def adopt(self, node: Node, data: object, borrowed: int) -> Adoption:
        """For an inserted key running through ``node``: what the node takes from ``data``
        and which of the caller's slots are duplicates. Positions below ``borrowed`` are the
        tree's own and are never returned. Pure: the tree applies the result."""

    def adopt_path(self, path: Sequence[Node], data: object, borrowed: int) -> PathAdoption:
        """:meth:`adopt` over the whole path an inserted key runs through (top-down): the
        nodes that take a value and every duplicate, joined. Pure. Components may override
        it with one loop that does not call :meth:`adopt` per node."""
        adopted: list[tuple[Node, np.ndarray]] = []
        duplicates: list[np.ndarray] = []
        for node in path:
            value, duplicate = self.adopt(node, data, borrowed)
            if value is not None:
                adopted.append((node, value))
            if duplicate is not None and len(duplicate):
                duplicates.append(duplicate)
        return adopted, join_slots(duplicates)


def per_token_adoption(
    node: Node, current: np.ndarray | None, slots: np.ndarray, held_from: int
) -> Adoption:
    """Adoption rule of per-token values: an empty node takes the caller's slots (copied, so
    the tree never aliases a caller's buffer) when the caller holds all of them; otherwise
    the caller's held slots on the node are duplicates."""
    start, end = node.start, node.end
    if current is None and start >= held_from:
        return slots[start:end].copy(), None
    if end > held_from:
        return None, slots[max(start, held_from) : end]
    return None, None


def per_token_path_adoption(
    path: Sequence[Node], index: int, slots: np.ndarray, held_from: int
) -> PathAdoption:
    """:func:`per_token_adoption` over a whole path (value slot ``index``) in one loop:
    duplicates on consecutive nodes are one run of the caller's array, so they come back as
    few views as there are runs (usually one) rather than one slice per node."""
    # bench insert/release: no call and no slice per node on the path
    adopted: list[tuple[Node, np.ndarray]] = []
    runs: list[np.ndarray] = []
    low = high = 0  # the open run of duplicate positions [low, high)
    for node in path:
        start = node.start
        end = start + node.length
        if node.values[index] is None and start >= held_from:
            adopted.append((node, slots[start:end].copy()))
        elif end > held_from:
            first = start if start > held_from else held_from
            if first != high:
                if high > low:
                    runs.append(slots[low:high])
                low = first
            high = end
    if high > low:
        runs.append(slots[low:high])
    return adopted, join_slots(runs)


def join_slots(parts: list[np.ndarray]) -> np.ndarray:
    """``parts`` as one array: empty, the only part itself, or one concatenation."""
    if not parts:
        return NO_SLOTS
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
