"""TreeCore: the component-agnostic radix tree over packed keys.

The tree knows keys, structure, locks, recency, candidate queues and size ledgers. It never
frees memory and never does I/O: operations return the slots that became free, and the
caller (the controller) gives them back to its pools. Per-component meaning comes from the
:class:`~radixkv.components.base.Component` hooks; the tree never asks a component its kind.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ..components.base import Component
from ..errors import ConfigError, InvalidSlotsError, LockError, StaleHandleError
from .config import TreeConfig
from .event_log import EventLog
from .events import AllBlocksCleared, KVEvent
from .keys import Namespace
from .node import Node
from .policy import EvictionQueue, make_policy
from .types import Lock, NodeId, TreeEvict, TreeInsert, TreeMatch

_NO_SLOTS = np.zeros(0, dtype=np.int64)


def _present(path: Sequence[Node], index: int) -> list[np.ndarray]:
    """Component ``index``'s values along ``path``; raises if one is missing."""
    values = []
    for node in path:
        value = node.values[index]
        if value is None:
            raise InvalidSlotsError(f"component {index} has no value on node {node.id}")
        values.append(value)
    return values


class TreeCore:
    """A radix tree of pages of key elements with per-component values.

    Keys are ``bytes`` of whole pages (``page_size * unit`` bytes a page; ``unit`` is 4, or 8
    with bigram keys). Every public method validates before it mutates: when it raises, the
    tree is unchanged.
    """

    def __init__(self, config: TreeConfig, components: Sequence[Component]) -> None:
        if not components:
            raise ConfigError("a tree needs at least one component")
        self.config = config
        self.page_size = config.page_size
        self.unit = 8 if config.bigram else 4
        self.page_bytes = self.page_size * self.unit
        self.components = list(components)
        for index, component in enumerate(self.components):
            component.bind(index)
        policy = make_policy(config.policy)
        self.queues = [EvictionQueue(policy) for _ in self.components]
        self.policy = policy
        self.log = EventLog(self, config.events)
        self._owner = object()
        self._ids = itertools.count(1)
        self._lock_ids = itertools.count(1)
        self._init_state()

    def _init_state(self) -> None:
        count = len(self.components)
        self.roots: dict[Namespace, Node] = {}
        self.nodes: dict[int, Node] = {}
        self.live_locks: dict[int, Lock] = {}
        self.cached = [0] * count
        self.protected = [0] * count
        self.tick = 0

    # ------------------------------------------------------------------ handles

    def root(self, namespace: Namespace) -> Node:
        """The root of ``namespace``, created on first use (a root holds no key or value)."""
        root = self.roots.get(namespace)
        if root is None:
            root = Node(next(self._ids), None, b"", 0, 0, len(self.components), namespace)
            self.roots[namespace] = root
            self.nodes[root.id] = root
        return root

    def node(self, node_id: int) -> Node:
        """The live node behind a handle; raises :class:`StaleHandleError` if it is gone."""
        node = self.nodes.get(node_id) if isinstance(node_id, int) else None
        if node is None:
            raise StaleHandleError(f"node {node_id!r} no longer exists (evicted or reset)")
        return node

    # ------------------------------------------------------------------ match

    def match(self, key: bytes, namespace: Namespace, *, touch: bool = True) -> TreeMatch:
        """Longest prefix of ``key`` usable by every component; never changes structure.

        With ``touch`` the covered nodes are accessed and hit (recency, hit counts). Cost:
        O(depth) dict gets and bytes compares, plus O(log) halving at the mismatch.
        """
        root = self.roots.get(namespace)
        if root is None:
            return TreeMatch(0, None, [])
        path, matched = self._walk(root, key)
        length = matched
        for component in self.components:
            length = component.usable_length(path, length)
        if length < matched:
            path = [node for node in path if node.start < length]
        if touch and path:
            self._access(path, hit=True)
        return TreeMatch(length, path[-1] if path else None, path)

    def _walk(self, root: Node, key: bytes) -> tuple[list[Node], int]:
        page_bytes, end = self.page_bytes, len(key)
        node, pos, path = root, 0, []
        while pos < end:
            child = node.children.get(key[pos : pos + page_bytes])
            if child is None:
                break
            edge = child.key
            path.append(child)
            if key[pos : pos + len(edge)] == edge:
                pos += len(edge)
                node = child
            else:
                pos += self._common_prefix(edge, key, pos)
                break
        return path, pos // self.unit

    def _common_prefix(self, edge: bytes, key: bytes, pos: int) -> int:
        """Bytes shared by ``edge`` and ``key[pos:]`` (whole pages, at least the first one),
        found by halving: only the still-unknown middle segment is compared each round."""
        page_bytes = self.page_bytes
        low = 1
        high = min(len(edge), len(key) - pos) // page_bytes
        while low < high:
            mid = (low + high + 1) // 2
            a, b = low * page_bytes, mid * page_bytes
            if edge[a:b] == key[pos + a : pos + b]:
                low = mid
            else:
                high = mid - 1
        return low * page_bytes

    def _access(self, path: Sequence[Node], hit: bool) -> None:
        self.tick += 1
        tick, queues = self.tick, self.queues
        for node in path:
            node.last_access = tick
            node.expiry = tick + node.ttl
            if hit:
                node.hits += 1
            for queue in queues:
                queue.touch(node)

    def path_values(self, match: TreeMatch, index: int) -> np.ndarray:
        """Component ``index``'s values along a match, concatenated once (a fresh array) and
        cut to the match length."""
        values = _present(match.path, index)
        if not values:
            return np.zeros(0, dtype=np.int64)
        joined: np.ndarray = np.concatenate(values)
        return joined[: match.length]

    def prefix_values(self, node: Node | None, index: int) -> np.ndarray:
        """Component ``index``'s values from the root down to the end of ``node``; O(depth)."""
        path = []
        while node is not None and node.parent is not None:
            path.append(node)
            node = node.parent
        path.reverse()
        values = _present(path, index)
        return np.concatenate(values) if values else np.zeros(0, dtype=np.int64)

    def touch(self, match: TreeMatch) -> None:
        """Access and hit the nodes of a match made with ``touch=False``."""
        if match.path:
            self._access(match.path, hit=True)

    def unlocked_on_path(self, match: TreeMatch, index: int) -> int:
        """Ledger size of component ``index`` values on the match path that no lock pins."""
        component = self.components[index]
        return sum(
            component.value_size(node)
            for node in match.path
            if node.values[index] is not None and not node.locks[index]
        )

    # ------------------------------------------------------------------ insert

    def insert(
        self,
        key: bytes,
        values: Sequence[np.ndarray | None],
        namespace: Namespace,
        *,
        borrowed: int = 0,
        priority: int = 0,
        ttl: int | None = None,
    ) -> TreeInsert:
        """Insert ``key`` (whole pages) with one value per component, aligned to the key.

        Slots on positions the tree already holds are duplicates, returned in ``freed`` —
        except positions below ``borrowed``, which the caller borrowed from the tree. A node on
        the path that lacks a component's value takes the caller's slots (revival). New
        values are copied so the tree never aliases the caller's buffer. Splits only where
        the key leaves an edge. Cost: O(depth) plus O(new elements) in C.
        Raises :class:`InvalidSlotsError` (nothing changed) if a value has the wrong length.
        """
        self._check_insert(key, values)
        root = self.root(namespace)
        self.tick += 1
        ttl = self.config.default_ttl if ttl is None else ttl
        freed: list[list[np.ndarray]] = [[] for _ in self.components]
        node, pos, end = root, 0, len(key)
        page_bytes, new_length = self.page_bytes, 0
        while pos < end:
            child = node.children.get(key[pos : pos + page_bytes])
            if child is None:
                node = self._add_leaf(node, key[pos:], values, priority, ttl)
                new_length = node.length
                break
            edge = child.key
            if key[pos : pos + len(edge)] != edge:
                shared = self._common_prefix(edge, key, pos)
                if shared < len(edge):
                    child = self._split(child, shared // self.unit)
            self._absorb(child, values, borrowed, freed, priority)
            pos += len(child.key)
            node = child
        return TreeInsert(node, new_length, [self._join(parts) for parts in freed])

    def _check_insert(self, key: bytes, values: Sequence[np.ndarray | None]) -> None:
        if len(key) % self.page_bytes:
            raise InvalidSlotsError("insert key must be a whole number of pages")
        if len(values) != len(self.components):
            raise InvalidSlotsError(
                f"expected {len(self.components)} component values, got {len(values)}"
            )
        length = len(key) // self.unit
        for component, value in zip(self.components, values):
            if value is not None and len(value) != length:
                raise InvalidSlotsError(
                    f"{component.kind} value has {len(value)} slots for {length} key elements"
                )

    @staticmethod
    def _join(parts: list[np.ndarray]) -> np.ndarray:
        if not parts:
            return _NO_SLOTS
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _add_leaf(
        self,
        parent: Node,
        key: bytes,
        values: Sequence[np.ndarray | None],
        priority: int,
        ttl: int,
    ) -> Node:
        start = parent.end
        leaf = Node(next(self._ids), parent, key, start, len(key) // self.unit,
                    len(self.components), parent.namespace)
        leaf.created = leaf.last_access = self.tick
        leaf.priority, leaf.ttl, leaf.expiry = priority, ttl, self.tick + ttl
        parent.children[key[: self.page_bytes]] = leaf
        self.nodes[leaf.id] = leaf
        for index, value in enumerate(values):
            if value is not None:
                self._set_value(leaf, index, value[start:].copy())
        self._refresh(leaf)
        self._refresh(parent)
        return leaf

    def _absorb(
        self,
        node: Node,
        values: Sequence[np.ndarray | None],
        borrowed: int,
        freed: list[list[np.ndarray]],
        priority: int,
    ) -> None:
        start, end = node.start, node.end
        revived = False
        for index, value in enumerate(values):
            if value is None:
                continue
            if node.values[index] is None:
                self._set_value(node, index, value[start:end].copy())
                revived = True
            elif end > borrowed:
                freed[index].append(value[max(start, borrowed) : end])
        node.last_access = self.tick
        node.expiry = self.tick + node.ttl
        if priority > node.priority:
            node.priority = priority
        for queue in self.queues:
            queue.touch(node)
        if revived:
            self._refresh(node)
            if node.parent is not None:
                self._refresh(node.parent)

    def _set_value(self, node: Node, index: int, value: np.ndarray) -> None:
        node.values[index] = value
        size = self.components[index].value_size(node)
        self.cached[index] += size
        if node.locks[index]:
            self.protected[index] += size
        if self.log.enabled and self.components[index].publishes_events:
            self.log.stored(node)

    def _split(self, node: Node, upper_length: int) -> Node:
        """Cut ``node`` after ``upper_length`` elements; ``node`` stays the lower half (its
        handle and the locks ending on it stay valid) and the new upper half is returned."""
        cut = upper_length * self.unit
        parent = node.parent
        assert parent is not None
        upper = Node(next(self._ids), parent, node.key[:cut], node.start, upper_length,
                     len(self.components), node.namespace)
        for component in self.components:
            index = component.index
            upper.values[index], node.values[index] = component.split_value(
                node.values[index], upper_length
            )
        upper.locks = node.locks.copy()
        upper.last_access, upper.created, upper.hits = node.last_access, node.created, node.hits
        upper.priority, upper.ttl, upper.expiry = node.priority, node.ttl, node.expiry
        if node.hashes is not None:
            pages = upper_length // self.page_size
            upper.hashes, node.hashes = node.hashes[:pages], node.hashes[pages:]
        node.key = node.key[cut:]
        node.start += upper_length
        node.length -= upper_length
        node.parent = upper
        parent.children[upper.key[: self.page_bytes]] = upper
        upper.children[node.key[: self.page_bytes]] = node
        self.nodes[upper.id] = upper
        self._refresh(upper)
        return upper

    # ------------------------------------------------------------------ locks

    def lock(self, node: Node) -> Lock:
        """Pin what each component needs for a prefix ending at ``node``; O(depth)."""
        boundaries = tuple(component.lock_boundary(node) for component in self.components)
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
        node = receipt.node
        for index, boundary in enumerate(receipt.boundaries):
            current = node
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

    def _on_lock_change(self, node: Node, index: int, direction: int) -> None:
        if node.values[index] is not None:
            self.protected[index] += direction * self.components[index].value_size(node)
        self._refresh_component(node, index)

    # ------------------------------------------------------------------ eviction

    def evict(self, budgets: Sequence[int]) -> TreeEvict:
        """Evict, per component, at least ``budgets[c]`` (ledger units) in policy order, or
        everything evictable. Evicting a component's value also evicts the values of the
        components after it on that node (cascade); a node left useless is removed whole.
        Returns the freed slots per component. Cost: O(log n) per evicted node."""
        if len(budgets) != len(self.components):
            raise ConfigError(f"expected {len(self.components)} budgets, got {len(budgets)}")
        freed: list[list[np.ndarray]] = [[] for _ in self.components]
        evicted = [0] * len(self.components)
        for component, queue in zip(self.components, self.queues):
            index = component.index
            while evicted[index] < budgets[index]:
                node = queue.pop()
                if node is None:
                    break
                self._evict_node(node, index, freed, evicted)
        return TreeEvict([self._join(parts) for parts in freed], evicted)

    def _evict_node(
        self, node: Node, first: int, freed: list[list[np.ndarray]], evicted: list[int]
    ) -> None:
        for index in range(first, len(self.components)):
            value = node.values[index]
            if value is None:
                continue
            if self.log.enabled and self.components[index].publishes_events:
                self.log.removed(node)
            size = self.components[index].value_size(node)
            self.cached[index] -= size
            evicted[index] += size
            freed[index].append(value)
            node.values[index] = None
        if self.components[first].removes_node(node):
            self._remove(node)
        else:
            self._refresh(node)

    def _remove(self, node: Node) -> None:
        """Unlink a node that holds no value and has no children."""
        parent = node.parent
        assert parent is not None and not node.children
        del parent.children[node.key[: self.page_bytes]]
        del self.nodes[node.id]
        for queue in self.queues:
            queue.discard(node)
        self._refresh(parent)

    def _refresh(self, node: Node) -> None:
        for index in range(len(self.components)):
            self._refresh_component(node, index)

    def _refresh_component(self, node: Node, index: int) -> None:
        queue = self.queues[index]
        if self.components[index].is_candidate(node):
            if node not in queue:
                queue.add(node)
        else:
            queue.discard(node)

    # ------------------------------------------------------------------ reset / events

    def reset(self) -> list[np.ndarray]:
        """Drop every node and lock; return per component every slot the tree held.

        Handles stay unique afterwards (ids keep counting); old handles and receipts become
        stale. Queues AllBlocksCleared when events are on."""
        held = [self.all_values(index) for index in range(len(self.components))]
        for queue in self.queues:
            queue.clear()
        self._init_state()
        if self.log.enabled:
            self.log.push(AllBlocksCleared())
        return held

    def all_values(self, index: int) -> np.ndarray:
        """Every slot component ``index`` holds in the tree, concatenated; O(nodes)."""
        parts = [n.values[index] for n in self.nodes.values()]
        return self._join([part for part in parts if part is not None])

    def take_events(self) -> list[KVEvent]:
        """Drain the queued KV events, oldest first."""
        return self.log.take()

    def node_ids(self) -> list[NodeId]:
        """Handles of every live node, roots included."""
        return [NodeId(node_id) for node_id in self.nodes]
