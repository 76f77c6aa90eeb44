"""Locks: reference counts that keep what running requests use from being evicted."""

from __future__ import annotations

from ..errors import LockError
from .node import Node
from .state import TreeState
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
        if self._all_pin_path:  # bench lock_unlock: no boundary to compute
            boundaries = self._bounds_zero
        else:
            end = node.end if end is None else end
            boundaries = tuple(c.lock_boundary(node, end) for c in self.components)
        for index, boundary in enumerate(boundaries):
            self._pin(node, index, boundary)
        receipt = Lock(self._owner, next(self._lock_ids), node, boundaries)
        self.live_locks[receipt.id] = receipt
        return receipt

    def _pin(self, node: Node, index: int, boundary: int) -> None:
        # bench lock_unlock: one tight loop per component, queue work deferred to eviction
        component = self.components[index]
        per_token, size = component.per_token, component.value_size
        protected, current = 0, node
        while current.parent is not None and current.start >= boundary:
            locks = current.locks
            locks[index] += 1
            if locks[index] == 1 and current.values[index] is not None:
                protected += current.length if per_token else size(current)
            current = current.parent
        self.protected[index] += protected

    def unlock(self, receipt: Lock) -> None:
        """Undo exactly what ``receipt`` pinned. Raises :class:`LockError` for a receipt of
        another cache or one already released (or invalidated by ``reset()``)."""
        self.check_receipt(receipt)
        for index, boundary in enumerate(receipt.boundaries):
            self._unpin(receipt.node, index, boundary)
        del self.live_locks[receipt.id]

    def _unpin(self, node: Node, index: int, boundary: int) -> None:
        component = self.components[index]
        per_token, size = component.per_token, component.value_size
        parked = self.queues[index].parked
        released, current = 0, node
        while current.parent is not None and current.start >= boundary:
            locks = current.locks
            locks[index] -= 1
            if not locks[index]:
                if current.values[index] is not None:
                    released += current.length if per_token else size(current)
                if parked:
                    self.queues[index].unpark(current)
            current = current.parent
        self.protected[index] -= released

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
