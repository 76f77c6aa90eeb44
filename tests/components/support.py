"""Shared helpers of the component scenario tests (SWA, MAMBA, hybrid).

A fresh pool hands out slots 0, 1, 2... in ascending order and reuses freed pages FIFO (a
freed page goes to the back of the queue), so every slot id in these tests is determined by
the steps before it. :class:`AuditedCache` runs ``check_invariants()`` and an explicit
FULL >= SWA >= MAMBA lock-order check after every call that may mutate the cache.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from radixkv import PrefixCache

from ..audited import AuditedCache as BaseAuditedCache


def check_lock_order(cache: PrefixCache) -> None:
    """On every node, each component's lock count is at most the one before it
    (components are ordered FULL, SWA, MAMBA), and no lock count is negative."""
    for node in cache.tree.nodes.values():
        counts = node.locks
        assert all(count >= 0 for count in counts), f"node {node.id} locks {counts}"
        for heavier, lighter in pairwise(counts):
            assert heavier >= lighter, f"node {node.id} locks {counts} break the lock order"


class AuditedCache(BaseAuditedCache):
    """A PrefixCache whose every mutating call is followed by ``check_invariants()`` and
    :func:`check_lock_order` (also when the call raises)."""

    def audit(self) -> None:
        super().audit()
        check_lock_order(self.cache)


def seq(start: int, count: int) -> list[int]:
    return list(range(start, start + count))


def locks(cache: AuditedCache, node_id: Any) -> list[int]:
    """Lock counts of a node, per component in tree order."""
    return list(cache.tree.node(node_id).locks)


def _value(kind: str, value: Any) -> Any:
    if value is None:
        return None
    return int(value[0]) if kind == "mamba" else value.tolist()


def tree(cache: AuditedCache) -> list[tuple[Any, ...]]:
    """Every node but the roots, depth first (children in insertion order), as
    ``(start, end, value per component..., locks)``; FULL/SWA values are slot lists,
    the MAMBA value is the state slot, ``None`` where the component holds nothing."""
    kinds = [component.name for component in cache.tree.components]
    rows: list[tuple[Any, ...]] = []
    stack = list(reversed(list(cache.tree.roots.values())))
    while stack:
        node = stack.pop()
        if node.parent is not None:
            values = tuple(_value(kind, v) for kind, v in zip(kinds, node.values))
            rows.append((node.start, node.end, *values, list(node.locks)))
        stack.extend(reversed(list(node.children.values())))
    return rows


def ledger(cache: AuditedCache, kind: str) -> tuple[int, int, int]:
    """(cached, evictable, protected) of one component."""
    stats = cache.stats().components[kind]
    return stats.cached, stats.evictable, stats.protected


def evicted(cache: AuditedCache, kind: str) -> dict[str, int]:
    """What eviction took from one component so far, by reason (zero reasons left out)."""
    return {reason: n for reason, n in cache.stats().components[kind].evicted.items() if n}


def available(cache: AuditedCache) -> dict[str, int]:
    """Free slots per component pool."""
    return {kind: stats.pool_available for kind, stats in cache.stats().components.items()}
