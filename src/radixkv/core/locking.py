"""Locks: reference counts that keep what running requests use from being evicted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import LockError
from .component_plans import NODE, PATH, WINDOW
from .node import Node
from .state import TreeState
from .types import Lock, TreeMatch

if TYPE_CHECKING:  # components import the node module of this package
    from ..components.base import Component


class Locker:
    """Lock receipts: a part of :class:`~radixkv.core.tree.TreeCore`, built on its
    :class:`TreeState` (whose containers it keeps references to). Each component pins,
    walking up from the lock's node, the nodes whose start is at least its boundary; the
    receipt records the boundaries, so unlock undoes exactly that even after splits (an
    upper half keeps the original start). Locking never touches the candidate queues (the
    evictor parks locked candidates it meets); unlocking puts a parked node back."""

    def __init__(self, state: TreeState) -> None:
        self.components = state.components
        self.live_locks = state.live_locks
        self.protected, self.holes = state.protected, state.holes
        self.queues, self._parked = state.queues, state._parked
        self._sizes = state._sizes
        self._owner, self._lock_ids = state._owner, state._lock_ids
        self._lock_modes, self._lock_plan = state._lock_modes, state._lock_plan
        self._lone_path = state._lone_path
        self._path_window = state._path_window
        self._path_node = state._path_node
        self._split = state._split  # bench lock_unlock: bound once, as cheap as self's

    def lock(self, node: Node, end: int | None = None) -> Lock:
        """Pin what each component needs for the prefix ``[0, end)`` ending in ``node``
        (``end`` defaults to the node's end; else a page boundary in ``(start, end]``), and
        nothing more: a prefix ending inside ``node`` first splits it there, so the rest of
        the node stays evictable. Mutates lock counts and ledgers (and the structure, for
        that split); O(depth)."""
        if end is not None and end < node.start + node.length:
            node = self._split(node, end - node.start)
        protected, holes = self.protected, self.holes
        if not holes[0]:  # bench lock_unlock: the common plans unrolled, see _lock_path_*
            # (full): no loop, no list; 618 -> 556 opcodes (bench opcodes), 2.14x / 2.28x
            # -> 3.92x / 3.50x SGLang rust at page 1 / 16 (two quiet 5-round runs).
            # Re-measured 2026-12-04 (bench opcodes, 1000 seqs): without the two-component
            # paths (here and in unlock) lock_unlock costs 1.13x (full+swa 715 -> 811,
            # full+mamba 630 -> 712 opcodes) and admit_finish 1.03-1.04x: they stay
            if self._lone_path:
                protected[0] += _pin_path(node, 0)
                receipt = Lock(self._owner, next(self._lock_ids), node, _PATH_ONLY)
                self.live_locks[receipt.id] = receipt
                return receipt
            if self._path_window:
                return self._lock_path_window(node, node.start + node.length if end is None
                                              else end)
            if self._path_node:
                return self._lock_path_node(node)
        start, boundaries = node.start, []
        # bench lock_unlock: one pass computes each boundary and pins; a whole-path lock
        # takes its own tight loop, a one-node lock pins the node alone
        for index, mode, component in self._lock_plan:
            if mode is PATH:
                protected[index] += (self._pin(node, index, 0) if holes[index]
                                     else _pin_path(node, index))
                boundaries.append(0)
            elif mode is NODE:
                boundaries.append(start)
                protected[index] += self._pin_node(node, index)
            elif mode is WINDOW:
                pinned, boundary = _pin_window(node, index, component.window_start(
                    start + node.length if end is None else end))
                protected[index] += pinned
                boundaries.append(boundary)
            else:
                boundary = component.lock_boundary(
                    node, start + node.length if end is None else end)
                boundaries.append(boundary)
                protected[index] += self._pin(node, index, boundary)
        receipt = Lock(self._owner, next(self._lock_ids), node, tuple(boundaries))
        self.live_locks[receipt.id] = receipt
        return receipt

    def _lock_path_window(self, node: Node, end: int) -> Lock:
        """:meth:`lock` for a whole-path component at index 0 (none lacking its value) and a
        window one at 1: the plan's loop unrolled (its dispatch was a fifth of a lock)."""
        protected = self.protected
        protected[0] += _pin_path(node, 0)
        pinned, boundary = _pin_window(node, 1, self.components[1].window_start(end))
        protected[1] += pinned
        receipt = Lock(self._owner, next(self._lock_ids), node, (0, boundary))
        self.live_locks[receipt.id] = receipt
        return receipt

    def _lock_path_node(self, node: Node) -> Lock:
        """:meth:`lock` for a whole-path component at index 0 (none lacking its value) and a
        one-node one at 1 (FULL + MAMBA): the plan's loop unrolled."""
        protected = self.protected
        protected[0] += _pin_path(node, 0)
        locks = node.locks  # bench lock_unlock (full+mamba): _pin_node inline, 686 -> 672
        locks[1] += 1
        if locks[1] == 1 and node.values[1] is not None:
            size = self._sizes[1]
            protected[1] += node.length if size is None else size(node)
        receipt = Lock(self._owner, next(self._lock_ids), node, (0, node.start))
        self.live_locks[receipt.id] = receipt
        return receipt

    def _pin_node(self, node: Node, index: int) -> int:
        """Pin component ``index`` on ``node`` alone; the ledger size newly locked."""
        locks = node.locks
        locks[index] += 1
        if locks[index] == 1 and node.values[index] is not None:
            size = self._sizes[index]
            return node.length if size is None else size(node)
        return 0

    def _unpin_node(self, node: Node, index: int) -> int:
        """Undo :meth:`_pin_node` (``node`` not split since, none parked); the ledger size
        no longer locked."""
        locks = node.locks
        locks[index] -= 1
        if not locks[index] and node.values[index] is not None:
            size = self._sizes[index]
            return node.length if size is None else size(node)
        return 0

    def lock_match(self, match: TreeMatch) -> Lock:
        """:meth:`lock` the prefix of ``match`` (a non-empty one); when that splits the node
        the prefix ends in, the match's path and node become the upper half, so its values
        still cover exactly the prefix."""
        node = match.node
        assert node is not None
        receipt = self.lock(node, match.length)
        if receipt.node is not node:
            match.path[-1] = match.node = receipt.node
        return receipt

    def _pin(self, node: Node, index: int, boundary: int) -> int:
        """Pin from ``node`` up while ``start >= boundary``; the ledger size newly locked."""
        size = self._sizes[index]
        protected, current = 0, node
        while current.parent is not None and current.start >= boundary:
            locks = current.locks
            locks[index] += 1
            if locks[index] == 1 and current.values[index] is not None:
                protected += current.length if size is None else size(current)
            current = current.parent
        return protected

    def unlock(self, receipt: Lock) -> None:
        """Undo exactly what ``receipt`` pinned. Raises :class:`LockError` for a receipt of
        another cache or one already released (or invalidated by ``reset()``)."""
        if type(receipt) is not Lock or receipt.owner is not self._owner or \
                self.live_locks.get(receipt.id) is not receipt:
            self.check_receipt(receipt)  # raises the precise error (or accepts a subclass)
        protected, node, parked = self.protected, receipt.node, self._parked
        if not parked[0] and not self.holes[0]:  # see lock
            if self._lone_path:
                protected[0] -= _unpin_path(node, 0)
                del self.live_locks[receipt.id]
                return
            if self._path_window and not parked[1]:
                protected[0] -= _unpin_path(node, 0)
                protected[1] -= _unpin_window(node, 1, receipt.boundaries[1])
                del self.live_locks[receipt.id]
                return
            if self._path_node and not parked[1] and receipt.boundaries[1] == node.start:
                protected[0] -= _unpin_path(node, 0)  # no split since the lock (see below)
                locks = node.locks  # _unpin_node inline (see _lock_path_node)
                locks[1] -= 1
                if not locks[1] and node.values[1] is not None:
                    size = self._sizes[1]
                    protected[1] -= node.length if size is None else size(node)
                del self.live_locks[receipt.id]
                return
        start = node.start
        for index, boundary in enumerate(receipt.boundaries):
            if parked[index]:
                protected[index] -= self._unpin(node, index, boundary)
            elif boundary == 0 and self._lock_modes[index] is PATH:
                protected[index] -= (self._unpin(node, index, 0) if self.holes[index]
                                     else _unpin_path(node, index))
            elif boundary != start:
                protected[index] -= self._unpin(node, index, boundary)
            else:  # no split since the lock: only this node
                protected[index] -= self._unpin_node(node, index)
        del self.live_locks[receipt.id]

    def _unpin(self, node: Node, index: int, boundary: int) -> int:
        """Unpin from ``node`` up while ``start >= boundary``, putting back parked nodes
        that become unlocked; the ledger size no longer locked."""
        size = self._sizes[index]
        queue = self.queues[index]
        released, current = 0, node
        while current.parent is not None and current.start >= boundary:
            locks = current.locks
            locks[index] -= 1
            if not locks[index]:
                if current.values[index] is not None:
                    released += current.length if size is None else size(current)
                if queue.parked:
                    queue.unpark(current)
            current = current.parent
        return released

    def move_down(self, receipt: Lock, node: Node, end: int | None = None) -> Lock:
        """:meth:`lock` ``[0, end)`` at ``node`` and :meth:`unlock` ``receipt``, as one step;
        leaves the same lock counts, ledgers, splits, candidate queues and lock ids as
        those two calls. With FULL alone and ``node`` below the receipt's node only the
        nodes between the two change: the counts from the receipt's node up cancel out, so
        none reaches 0 and no parked candidate returns (bench sim: a commit's two
        whole-path walks gone). Raises :class:`LockError` as :meth:`unlock` does, with
        nothing changed."""
        if type(receipt) is not Lock or receipt.owner is not self._owner or \
                self.live_locks.get(receipt.id) is not receipt:
            self.check_receipt(receipt)
        old = receipt.node
        if self._lone_path and old.parent is not None:
            if end is not None and end < node.start + node.length:
                node = self._split(node, end - node.start)
            # bench sim (896 tokens, p16): a commit's one new node, no list (move_down
            # and _path_down_to 164 -> 125 opcodes a call)
            below = (node,) if node.parent is old else _path_down_to(node, old)
            if below is not None:
                pinned = 0
                for current in below:  # lowest first: the ones going 0 -> 1 come first
                    locks = current.locks
                    if not locks[0] and current.values[0] is not None:
                        pinned += current.length
                    locks[0] += 1
                self.protected[0] += pinned
                moved = Lock(self._owner, next(self._lock_ids), node, _PATH_ONLY)
                del self.live_locks[receipt.id]
                self.live_locks[moved.id] = moved
                return moved
        moved = self.lock(node, end)
        self.unlock(receipt)
        return moved

    def check_receipt(self, receipt: Lock) -> None:
        """Raise :class:`LockError` unless ``receipt`` is a live lock of this tree; pure."""
        if not isinstance(receipt, Lock):
            raise LockError(f"expected a Lock receipt, got {type(receipt).__name__}")
        if receipt.owner is not self._owner:
            raise LockError("this lock receipt was issued by another cache")
        if self.live_locks.get(receipt.id) is not receipt:
            raise LockError(f"lock {receipt.id} was already released (or the cache was reset)")

    def lock_preview(self, node: Node | None, end: int) -> list[int]:
        """Per component, the ledger size a lock of ``[0, end)`` at ``node`` would newly
        protect (values on nodes it would pin that no lock pins yet); pure, O(depth)."""
        if node is None:
            return [0] * len(self.components)
        sizes = []
        for component in self.components:
            index, total, current = component.index, 0, node
            boundary = component.lock_boundary(node, end)
            while current.parent is not None and current.start >= boundary:
                if current.values[index] is not None and not current.locks[index]:
                    total += _pinned_size(component, current, end)
                current = current.parent
            sizes.append(total)
        return sizes


_PATH_ONLY = (0,)
"""The boundaries of a lock of a lone whole-path component."""


def _pinned_size(component: Component, node: Node, end: int) -> int:
    """The ledger size of ``node``'s value that a lock of ``[0, end)`` pins: all of it, or
    for a prefix ending inside the node, the upper half the lock would split off."""
    if end >= node.start + node.length:
        return component.value_size(node)
    if component.per_token:
        return end - node.start
    upper, _ = component.split_value(node.values[component.index], end - node.start)
    return 0 if upper is None else component.value_size(node)


# bench lock_unlock: the whole-path walks of per-token components (FULL) get their own tight
# loops: no boundary compare, no size call. A whole-path lock pins every ancestor, so lock
# counts never grow downwards along a path: the nodes a lock takes from 0 to 1 (or an unlock
# from 1 to 0) are the lowest ones, up to the first ancestor that stays locked, and while no
# node lacks the component's value (its hole count is 0; otherwise the generic walk runs)
# the tokens they hold are one subtraction of key positions; the values are not read.


def _pin_path(node: Node, index: int) -> int:
    """Pin ``node`` and every ancestor below the root, none lacking the value; the tokens
    newly locked."""
    end, parent = node.start + node.length, node.parent
    while parent is not None:
        locks = node.locks
        if locks[index]:  # locked already, and so is every ancestor
            _add_up(node, index, 1)
            return end - (node.start + node.length)
        locks[index] = 1
        node, parent = parent, parent.parent
    return end


def _pin_window(node: Node, index: int, target: int) -> tuple[int, int]:
    """Pin ``node`` and its ancestors up to the first that starts at or before ``target``
    (the top node starts at 0, so the walk ends below the root); the tokens newly locked
    and that node's start, the lock's boundary. bench lock_unlock (full+swa): one walk
    instead of a boundary walk and a pinning walk."""
    protected, current = 0, node
    while True:
        locks = current.locks
        locks[index] += 1
        if locks[index] == 1 and current.values[index] is not None:
            protected += current.length
        if current.start <= target:
            return protected, current.start
        current = current.parent  # type: ignore[assignment]


def _unpin_window(node: Node, index: int, boundary: int) -> int:
    """Undo :func:`_pin_window` (``boundary`` is the start of the top node it pinned; a
    split above keeps it, see :class:`Locker`), none parked; the tokens no longer locked."""
    released, current = 0, node
    while True:
        locks = current.locks
        locks[index] -= 1
        if not locks[index] and current.values[index] is not None:
            released += current.length
        if current.start <= boundary:
            return released
        current = current.parent  # type: ignore[assignment]


def _unpin_path(node: Node, index: int) -> int:
    """Unpin ``node`` and every ancestor below the root (none parked, none lacking the
    value); the tokens no longer locked."""
    end, parent = node.start + node.length, node.parent
    while parent is not None:
        locks = node.locks
        if locks[index] != 1:  # still locked after this, and so is every ancestor
            _add_up(node, index, -1)
            return end - (node.start + node.length)
        locks[index] = 0
        node, parent = parent, parent.parent
    return end


def _path_down_to(node: Node, top: Node) -> list[Node] | None:
    """The nodes strictly below ``top`` on the path up from ``node`` (``node`` first), or
    ``None`` when ``top`` is not a proper ancestor of ``node``; pure, O(nodes between)."""
    below, end = [], top.start + top.length
    current: Node | None = node
    while current is not None and current.start >= end:
        below.append(current)
        current = current.parent
    return below if current is top and below else None


def _add_up(node: Node, index: int, delta: int) -> None:
    """Add ``delta`` to the lock count of ``node`` and every ancestor below the root."""
    parent = node.parent
    while parent is not None:
        node.locks[index] += delta
        node, parent = parent, parent.parent
