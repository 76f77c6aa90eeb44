"""Audits of a TreeCore: ``check_invariants`` recomputes everything from scratch and compares;
``snapshot`` captures the whole observable state as plain data so tests can prove that a
failed call changed nothing. Both cost O(nodes + locks x depth); neither mutates."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvariantError
from .node import Node
from .tiers import PRIMARY
from .tree import TreeCore


def _fail(message: str) -> None:
    raise InvariantError(message)


def check_tree(tree: TreeCore) -> None:
    """Raise :class:`InvariantError` on the first inconsistency found in ``tree``."""
    seen = _check_structure(tree)
    if seen != set(tree.nodes):
        _fail(f"arena holds unreachable nodes {sorted(set(tree.nodes) - seen)[:5]}")
    _check_locks(tree)
    _check_queues(tree)
    _check_lower_queues(tree)
    if tree.lower:
        check_tier_rules(tree)
    _check_ledgers(tree)
    _check_holes(tree)
    _check_no_double_slots(tree)


def check_tier_rules(tree: TreeCore) -> None:
    """The rules across tiers (see :mod:`radixkv.core.tiers`): every node holds its primary
    value on some tier, one without it on device holds no device value, and on every tier
    a node holding the primary there has a parent that does (roots aside)."""
    device = tree.device
    for node in tree.nodes.values():
        parent = node.parent
        if parent is None:
            continue
        if device.value(node, PRIMARY) is None:
            if device.holds_any(node):
                _fail(f"node {node.id} holds a device value without its primary one")
            if all(tier.value(node, PRIMARY) is None for tier in tree.lower):
                _fail(f"node {node.id} holds its primary value on no tier")
        if parent.parent is None:
            continue
        for tier in tree.tiers:
            if tier.value(node, PRIMARY) is not None and tier.value(parent, PRIMARY) is None:
                _fail(f"node {node.id} holds its primary value on the {tier.name} tier, "
                      f"its parent {parent.id} does not")


def _check_structure(tree: TreeCore) -> set[int]:
    seen: set[int] = set()
    for namespace, root in tree.roots.items():
        if root.parent is not None or root.key or root.stop or root.namespace != namespace:
            _fail(f"root {root.id} of {namespace!r} is malformed")
        if any(value is not None for value in root.values) or any(root.locks):
            _fail(f"root {root.id} holds a value or a lock")
        stack = [root]
        while stack:
            node = stack.pop()
            if node.id in seen:
                _fail(f"node {node.id} is reachable twice")
            seen.add(node.id)
            if tree.nodes.get(node.id) is not node:
                _fail(f"node {node.id} is in the tree but not in the arena")
            for first, child in node.children.items():
                _check_child(tree, node, first, child)
                stack.append(child)
    return seen


def _check_child(tree: TreeCore, parent: Node, first: bytes, child: Node) -> None:
    if child.parent is not parent:
        _fail(f"node {child.id} does not point back to its parent {parent.id}")
    if not child.key or len(child.key) % tree.page_bytes or first != child.key[: tree.page_bytes]:
        _fail(f"node {child.id} has a bad key or child-dict entry")
    if child.length * tree.unit != len(child.key) or child.start != parent.end:
        _fail(f"node {child.id} has length/start inconsistent with its key and parent")
    if child.stop != parent.stop + len(child.key):
        _fail(f"node {child.id} has stop {child.stop}, not its parent's plus its key's bytes")
    if child.namespace != parent.namespace:
        _fail(f"node {child.id} left its namespace")
    if child.hashes is not None and len(child.hashes) * tree.page_size != child.length:
        _fail(f"node {child.id} has {len(child.hashes)} page hashes for {child.length} elements")
    for component in tree.components:
        component.check_node(child)
    locks = child.locks
    for index, depends in enumerate(tree.depends):
        for dependency in depends:
            if locks[index] > locks[dependency]:
                names = tree.components[index].name, tree.components[dependency].name
                _fail(f"node {child.id} locks {locks}: {names[0]} locked more often than "
                      f"{names[1]}, which it depends on")


def _check_locks(tree: TreeCore) -> None:
    expected: dict[int, list[int]] = {}
    for receipt in tree.live_locks.values():
        alive = tree.nodes.get(receipt.node.id) is receipt.node
        if not alive and receipt.node.parent is not None:  # a root may go: it pins nothing
            _fail(f"live lock {receipt.id} ends on a removed node")
        for index, boundary in enumerate(receipt.boundaries):
            current = receipt.node
            while current.parent is not None and current.start >= boundary:
                counts = expected.setdefault(current.id, [0] * len(tree.components))
                counts[index] += 1
                current = current.parent
    for node in tree.nodes.values():
        want = expected.get(node.id, [0] * len(tree.components))
        if node.locks != want:
            _fail(f"node {node.id} has locks {node.locks}, live receipts account for {want}")


def _check_queues(tree: TreeCore) -> None:
    for component, queue in zip(tree.components, tree.queues):
        entries = dict(queue.members)
        for node in tree.nodes.values():
            member = entries.get(node.id)
            if component.is_candidate(node) != (member is not None):
                _fail(f"{component.name} candidate set is wrong about node {node.id}")
            if member is not None and not _key_ok(tree, member[0], tree.policy.key(node)):
                _fail(f"{component.name} queue holds a stale key for node {node.id}")
        for node_id, node in queue.parked.items():
            if node_id not in entries or not node.locks[component.index]:
                _fail(f"{component.name} parked node {node_id} is not a locked member")


def _check_lower_queues(tree: TreeCore) -> None:
    for tier in tree.lower:
        for component, (view, queue) in zip(tree.components, tier.candidacy):
            for node in tree.nodes.values():
                member = queue.members.get(node.id)
                if view.is_candidate(node) != (member is not None):
                    _fail(f"{tier.name} {component.name} candidate set is wrong about node "
                          f"{node.id}")
                if member is not None and not _key_ok(tree, member[0], queue.key_of(node)):
                    _fail(f"{tier.name} {component.name} queue holds a stale key for node "
                          f"{node.id}")


def _key_ok(tree: TreeCore, stored: tuple[int, ...], current: tuple[int, ...]) -> bool:
    """A stored key is exact, or with a monotone policy a lower bound re-keyed at pop."""
    return stored <= current if tree.policy.monotone else stored == current


def _check_ledgers(tree: TreeCore) -> None:
    for tier in tree.tiers:
        for component in tree.components:
            index = component.index
            cached = protected = 0
            for node in tree.nodes.values():
                if tier.value(node, index) is not None:
                    size = component.value_size(node)
                    cached += size
                    protected += size if node.locks[index] else 0
            if not tier.keeps_protected:
                protected = tier.protected[index]
            if (cached, protected) != (tier.cached[index], tier.protected[index]):
                _fail(
                    f"{component.name} ledger of the {tier.name} tier says cached="
                    f"{tier.cached[index]} protected={tier.protected[index]}, nodes say "
                    f"{cached}/{protected}")


def _check_holes(tree: TreeCore) -> None:
    for tier in tree.tiers:
        for component in tree.components:
            index = component.index
            holes = sum(1 for n in tree.nodes.values() if n.parent is not None
                        and tier.value(n, index) is None)
            if holes != tier.holes[index]:
                _fail(f"{component.name}: {holes} nodes lack a value on the {tier.name} tier, "
                      f"the tree counts {tier.holes[index]}")


def _check_no_double_slots(tree: TreeCore) -> None:
    for component in tree.components:
        held = tree.all_values(component.index)
        if np.unique(held).size != held.size:
            _fail(f"{component.name}: a slot is held by two nodes")


def snapshot_tree(tree: TreeCore) -> Any:
    """The tree's whole observable state as nested tuples of plain values."""
    nodes = tuple(
        (
            node.id,
            node.parent.id if node.parent is not None else None,
            node.key,
            node.start,
            tuple(None if v is None else tuple(v.tolist()) for v in node.values),
            tuple(node.locks),
            (node.last_access, node.created, node.hits, node.priority, node.ttl),
            None if node.hashes is None else tuple(node.hashes),
            tuple(sorted(child.id for child in node.children.values())),
        )
        for node in sorted(tree.nodes.values(), key=lambda n: n.id)
    )
    queues = tuple(tuple(node.id for node in queue.ordered()) for queue in tree.queues)
    roots = tuple(sorted((repr(ns), root.id) for ns, root in tree.roots.items()))
    return (nodes, queues, roots, tuple(tree.cached), tuple(tree.protected), tree.tick,
            tuple(sorted(tree.live_locks)))
