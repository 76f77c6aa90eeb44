"""Locks: reference counts that keep what running requests use from being evicted."""

from __future__ import annotations

from ..errors import LockError
from .node import Node
from .state import TreeState
from .types import Lock


class Locker(TreeState):
    """Lock receipts. Each component pins, walking up from the lock's node, the nodes whose
    start is at least its boundary; the receipt records the boundaries, so unlock undoes
    exactly that even after splits (an upper half keeps the original start)."""

    def lock(self, node: Node, end: int | None = None) -> Lock:
        """Pin what each component needs for the prefix ``[0, end)`` ending in ``node``
        (``end`` defaults to the node's end). Mutates lock counts and ledgers; O(depth)."""
        end = node.end if end is None else end
        boundaries = tuple(component.lock_boundary(node, end) for component in self.components)
        for index, boundary in enumerate(boundaries):
            current = node
            while current.parent is not None and current.start >= boundary:
                current.locks[index] += 1
                if current.locks[index] == 1:
                    self._on_lock_change(current, index, +1)
                current = current.parent
        receipt = Lock(self._owner, next(self._lock_ids), node, boundaries)
        self.live_locks[receipt.id] = receipt
        return receipt

    def unlock(self, receipt: Lock) -> None:
        """Undo exactly what ``receipt`` pinned. Raises :class:`LockError` for a receipt of
        another cache or one already released (or invalidated by ``reset()``)."""
        self.check_receipt(receipt)
        for index, boundary in enumerate(receipt.boundaries):
            current = receipt.node
            while current.parent is not None and current.start >= boundary:
                current.locks[index] -= 1
                if current.locks[index] == 0:
                    self._on_lock_change(current, index, -1)
                current = current.parent
        del self.live_locks[receipt.id]

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

    def _on_lock_change(self, node: Node, index: int, direction: int) -> None:
        if node.values[index] is not None:
            self.protected[index] += direction * self.components[index].value_size(node)
        self._refresh_component(node, index)
