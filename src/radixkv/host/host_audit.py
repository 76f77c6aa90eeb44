"""Audit of the host tier: the host pools and the copies in flight (the rules across tiers
are the tree's own audit).
Read-only; O(nodes + slots)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.tiers import HOST
from ..errors import InvariantError

if TYPE_CHECKING:
    from ..core.tree import TreeCore
    from .host_controller import HostTierController


def _fail(message: str) -> None:
    raise InvariantError(message)


def check_host(host: HostTierController, tree: TreeCore,
               reserved: Sequence[np.ndarray] | None = None) -> None:
    """Raise :class:`InvariantError` on the first inconsistency of the host tier;
    ``reserved``: per component, host slots held outside the tree (L3 reads in flight)."""
    for index, pool in enumerate(host.pools):
        held = tree.all_values(index, HOST)
        if reserved is not None:
            held = np.concatenate([held, reserved[index]])
        if np.unique(held).size != held.size:
            _fail(f"host {tree.components[index].name}: a host slot is held twice")
        pool.check(held)
    _check_records(host, tree)


def _check_records(host: HostTierController, tree: TreeCore) -> None:
    tracked: dict[int, int] = {}
    for ticket, record in host.records.items():
        for lock in record.locks:
            tree.locker.check_receipt(lock)
        for node_id, (node, indices) in record.nodes.items():
            if tree.nodes.get(node_id) is not node:
                _fail(f"copy {ticket} writes to node {node_id}, which is gone")
            if not any(node.locks):
                _fail(f"copy {ticket} writes to node {node_id}, which is not locked")
            for index in indices:
                if tree.value(node, index, record.tier) is None:
                    _fail(f"copy {ticket} writes a value node {node_id} does not hold")
            tracked[node_id] = tracked.get(node_id, 0) + 1
    for node_id, records in tree.copying.items():
        if tracked.get(node_id) != len(records) or any(
                r.ticket not in host.records for r in records):
            _fail(f"node {node_id} is tracked by copies the controller does not hold")
    if len(tracked) != len(tree.copying):
        _fail("the tree tracks fewer nodes in flight than the controller's copies write")

