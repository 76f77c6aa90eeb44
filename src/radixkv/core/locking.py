"""Locks: reference counts that keep what running requests use from being evicted."""

from __future__ import annotations

from ..errors import LockError
from .node import Node
from .state import NODE, PATH, TreeState
from .types import Lock


class Locker(TreeState):
    """Lock receipts. Each component pins, walking up from the lock's node, the nodes whose
    start is at least its boundary; the receipt records the boundaries, so unlock undoes
    exactly that even after splits (an upper half keeps the original start). Locking never
    touches the candidate queues (the evictor parks locked candidates it meets); unlocking
    puts a parked node back."""

    def lock(self, node: Node, end: int | None = None) -> Lock:
        """Pin what each component needs for the prefix ``[0, end)`` ending in ``node``
        (``end`` defaults to the node's end). Mutates lock counts and ledgers; O(depth)."""
        protected, holes, start, boundaries = self.protected, self.holes, node.start, []
        # bench lock_unlock: one pass computes each boundary and pins; a whole-path lock
        # takes its own tight loop, a one-node lock is done inline
        for index, mode in enumerate(self._lock_modes):
            if mode is PATH:
                protected[index] += (self._pin(node, index, 0) if holes[index]
                                     else _pin_path(node, index))
                boundaries.append(0)
                continue
            boundary = start if mode is NODE else self.components[index].lock_boundary(
                node, start + node.length if end is None else end)
            boundaries.append(boundary)
            if boundary != start:
                protected[index] += self._pin(node, index, boundary)
                continue
            locks = node.locks
            locks[index] += 1
            if locks[index] == 1 and node.values[index] is not None:
                size = self._sizes[index]
                protected[index] += node.length if size is None else size(node)
        receipt = Lock(self._owner, next(self._lock_ids), node, tuple(boundaries))
        self.live_locks[receipt.id] = receipt
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
        start = node.start
        for index, boundary in enumerate(receipt.boundaries):
            if parked[index]:
                protected[index] -= self._unpin(node, index, boundary)
            elif boundary == 0 and self._lock_modes[index] is PATH:
                protected[index] -= (self._unpin(node, index, 0) if self.holes[index]
                                     else _unpin_path(node, index))
            elif boundary != start:
                protected[index] -= self._unpin(node, index, boundary)
            else:  # no split since the lock: only this node, inline
                locks = node.locks
                locks[index] -= 1
                if not locks[index] and node.values[index] is not None:
                    size = self._sizes[index]
                    protected[index] -= node.length if size is None else size(node)
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
                    total += component.value_size(current)
                current = current.parent
            sizes.append(total)
        return sizes


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


def _unpin_path(node: Node, index: int) -> int:
    """Unpin ``node`` and every ancestor below the root (none parked, none lacking the
    value); the tokens no longer locked."""
    end, parent = node.start + node.length, node.parent
    while parent is not None:
        locks = node.locks
        count = locks[index] - 1
        locks[index] = count
        if count:  # still locked, and so is every ancestor
            _add_up(parent, index, -1)
            return end - (node.start + node.length)
        node, parent = parent, parent.parent
    return end


def _add_up(node: Node, index: int, delta: int) -> None:
    """Add ``delta`` to the lock count of ``node`` and every ancestor below the root."""
    parent = node.parent
    while parent is not None:
        node.locks[index] += delta
        node, parent = parent, parent.parent
