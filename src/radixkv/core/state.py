"""TreeState: the data of a TreeCore and the bookkeeping every operation shares."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError, StaleHandleError
from .component_plans import NODE, PATH, WINDOW, dependencies, dependents, lock_mode
from .event_log import EventLog
from .keys import TOKEN_BYTES, Namespace
from .node import Node
from .policy import make_policy
from .tiers import DEVICE, LOWER_MEDIA, Tier
from .tree_config import TreeConfig
from .types import InFlight, Lock

if TYPE_CHECKING:  # components import the node module of this package
    from ..components.base import Component

NO_SLOTS = np.zeros(0, dtype=np.int64)

_NODE_IDS = itertools.count(1)
"""Node ids of every tree in the process: a handle from another cache is never a node of
this one (so it reads as stale, never as an unrelated node)."""

class TreeState:
    """Nodes, roots, queues, ledgers, locks and the clock of one tree.

    Each :class:`~radixkv.core.tiers.Tier` keeps its ledger, candidate queues and evicted
    counts; ``cached``, ``protected``, ``holes``, ``queues`` and ``evicted`` are the device
    tier's, by short names (the hot paths read them).
    """

    def __init__(self, config: TreeConfig, components: Sequence[Component]) -> None:
        if not components:
            raise ConfigError("a tree needs at least one component")
        self.config = config
        self.page_size = config.page_size
        self.unit = 2 * TOKEN_BYTES if config.bigram else TOKEN_BYTES
        self.page_bytes = self.page_size * self.unit
        self.components = list(components)
        count = len(self.components)
        for index, component in enumerate(self.components):
            component.bind(index, config.page_size)
        self.policy = make_policy(config.policy)
        media = (config.medium, *LOWER_MEDIA)
        self.tiers = tuple(Tier(index, self.components, media[index], self.policy, config.tiers)
                           for index in range(config.tiers))
        """The tree's tiers, the device's first (see :mod:`radixkv.core.tiers`)."""
        self.device = self.tiers[DEVICE]
        self.lower = self.tiers[1:]
        """The tiers below the device (none without a host tier)."""
        self.tier_count = len(self.tiers)
        self.width = count * self.tier_count
        """Slots of ``Node.values``: one per component and tier."""
        self._slot_views = [view for tier in self.tiers for view in tier.views]
        """Per slot of ``Node.values``, the component view that reads it."""
        owners = {tier.slot(index): (tier, index)
                  for tier in self.tiers for index in range(count)}
        self._slot_owners = [owners[slot] for slot in range(self.width)]
        """Per slot of ``Node.values``, its (tier, component)."""
        self.depends = dependencies(self.components)
        """Per component, the indices of the components it depends on (its spec says)."""
        self.cascade = dependents(self.depends)
        """Per component, what evicting its value on a node evicts along (dependents)."""
        self._removal = [tuple(i for i in range(len(self.components))
                               if i != first and i not in self.cascade[first])
                         for first in range(len(self.components))]
        """Per component, the others' values that go when its eviction removes the node."""
        self._lock_modes = [lock_mode(c) for c in self.components]
        self._lock_plan = tuple(zip(range(len(self.components)), self._lock_modes,
                                    self.components))
        self._lone_path = self._lock_modes == [PATH]
        """One component, pinning whole paths (FULL alone): locks take a fast path."""
        self._path_window = self._lock_modes == [PATH, WINDOW]
        """A whole-path component and a window one (FULL + SWA): locks take a fast path."""
        self._path_node = self._lock_modes == [PATH, NODE]
        """A whole-path component and a one-node one (FULL + MAMBA): the same."""
        self._sizes = [None if c.per_token else c.value_size for c in self.components]
        """Per component, its value_size hook, or None when that is the node's length."""
        self._whole_all = all(c.whole_when_complete for c in self.components)
        self._whole_when_complete = [c for c in self.components if c.whole_when_complete]
        self._never_whole = [c for c in self.components if not c.whole_when_complete]
        """Components whose usable_length a match always asks (MAMBA)."""
        self.queues = self.device.queues
        """Per component, its device candidate queue (the device tier's, by a short name)."""
        self._candidacy = self.device.candidacy
        """Per component, the component and its candidate queue (what a refresh walks)."""
        self._indices = range(len(self.components))
        self._ones = (1,) * len(self.components)
        self.copying: dict[int, list[InFlight]] = {}
        """Node id -> the in-flight copies writing to the node (see :class:`InFlight`)."""
        self._parked = [queue.parked for queue in self.queues]
        self.log = EventLog(self, config.events, config.event_queue_limit)
        self._owner = object()
        self._ids = _NODE_IDS
        self._lock_ids = itertools.count(1)
        self.evicted = self.device.evicted
        """The device tier's evicted counts, by a short name (see :class:`Tier`)."""
        self.roots: dict[Namespace, Node] = {}
        self.nodes: dict[int, Node] = {}
        self.live_locks: dict[int, Lock] = {}
        device = self.device
        # bench insert/match_prefix: the device ledger's lists under short names
        self.cached, self.protected, self.holes = device.cached, device.protected, device.holes
        self.tick = 0
        """The clock of recency stamps: one tick per match that touches and per insert."""

    def _clear(self) -> None:
        """Forget every node, lock and ledger entry. Clears the containers in place: the
        tree's parts keep references to them from their construction."""
        self.roots.clear()
        self.nodes.clear()
        self.live_locks.clear()
        self.copying.clear()
        for tier in self.tiers:
            tier.reset()
        self.tick = 0

    # ------------------------------------------------------------------ (component, tier)

    def value(self, node: Node, index: int, tier: int = DEVICE) -> np.ndarray | None:
        """Component ``index``'s value on ``node`` on ``tier`` (``None``: it holds none)."""
        return self.tiers[tier].value(node, index)

    def has(self, node: Node, index: int, tier: int = DEVICE) -> bool:
        """Whether ``node`` holds a value of component ``index`` on ``tier``."""
        return self.tiers[tier].value(node, index) is not None

    def view(self, index: int, tier: int = DEVICE) -> Component:
        """Component ``index`` bound to ``tier``'s value slot (its rules read that tier)."""
        return self.tiers[tier].views[index]

    def root(self, namespace: Namespace) -> Node:
        """The root of ``namespace``, created on first use (a root holds no key or value).
        Only an insert that caches something creates one; eviction drops empty ones."""
        root = self.roots.get(namespace)
        if root is None:
            root = Node(next(self._ids), None, b"", 0, 0, len(self.components), namespace,
                        self.tier_count)
            self.roots[namespace] = root
            self.nodes[root.id] = root
        return root

    def node(self, node_id: int) -> Node:
        """The live node behind a handle this tree issued (never a namespace root); raises
        :class:`StaleHandleError` if it is gone, is another cache's, is a root, or is not a
        handle at all."""
        node = self.nodes.get(node_id) if type(node_id) is int else None
        if node is None or node.parent is None:
            node = self._slow_node(node_id)
        return node

    def _slow_node(self, node_id: object) -> Node:
        node = None
        if isinstance(node_id, np.integer):
            node = self.nodes.get(int(node_id))
        elif isinstance(node_id, bool) or not isinstance(node_id, int):
            raise StaleHandleError(f"a node handle is an int NodeId, got {node_id!r}")
        else:
            node = self.nodes.get(node_id)
        if node is None:
            raise StaleHandleError(f"node {node_id!r} is not a node of this cache (evicted, "
                                   "reset, or another cache's)")
        if node.parent is None:
            raise StaleHandleError(f"node {node_id!r} is a namespace root: no handle names it")
        return node

    def _set_value(self, node: Node, index: int, value: np.ndarray) -> None:
        """Give ``node`` a device value of component ``index`` it lacks (filled in place:
        see :class:`Node`), with its ledgers, and publish it."""
        # bench insert: the device tier on its own path (full+mamba release 3692 -> 3646
        # opcodes a call, bench opcodes); a device value's slot is its component's index
        assert node.values[index] is None, "a value is never replaced in place"
        node.values[index] = value
        self.holes[index] -= 1
        sizer = self._sizes[index]  # bench sim: no call for a per-token value's size
        size = node.length if sizer is None else sizer(node)
        self.cached[index] += size
        if node.locks[index]:
            self.protected[index] += size
        if self.log.enabled and self.components[index].publishes_events:
            self.log.stored(node)

    def _set_below(self, tier: Tier, node: Node, index: int, value: np.ndarray) -> None:
        """Give ``node`` a value of component ``index`` it lacks on ``tier``, below the
        device, with its ledger (no ``protected`` there; the controller announces it once
        its copy is acknowledged)."""
        slot = tier.slot(index)
        assert node.values[slot] is None, "a value is never replaced in place"
        node.values[slot] = value
        tier.holes[index] -= 1
        tier.cached[index] += self.components[index].value_size(node)

    def _refresh(self, node: Node) -> None:
        """Put ``node`` in or out of each component's candidate queue."""
        # bench evict: one loop over (component, queue) pairs, no call per component
        for component, queue in self._candidacy:
            if component.is_candidate(node):
                if node.id not in queue.members:  # bench insert: no __contains__ call
                    queue.add(node)
            elif node.id in queue.members:
                queue.discard(node)
        if self.lower:
            self._refresh_lower(node)

    def _refresh_lower(self, node: Node) -> None:
        """Put ``node`` in or out of each candidate queue of the tiers below the device
        (re-keyed: whether a node is held there alone is part of the primary's order)."""
        for tier in self.lower:
            for view, queue in tier.candidacy:
                if view.is_candidate(node):
                    queue.add(node)
                elif node.id in queue.members:
                    queue.discard(node)

    def _split(self, node: Node, upper_length: int) -> Node:
        """Cut ``node`` after ``upper_length`` elements; ``node`` stays the lower half (its
        handle and the locks ending on it stay valid) and the new upper half is returned."""
        cut = upper_length * self.unit
        parent = node.parent
        assert parent is not None
        upper = Node(next(self._ids), parent, node.key[:cut], node.start, upper_length,
                     len(self.components), node.namespace, self.tier_count)
        halves = [view.split_value(value, upper_length)
                  for view, value in zip(self._slot_views, node.values)]
        upper.values = [upper_value for upper_value, _ in halves]
        node.values = [lower_value for _, lower_value in halves]  # a new list (see Node)
        for slot, value in enumerate(upper.values):
            if value is None:
                tier, index = self._slot_owners[slot]
                tier.holes[index] += 1
        upper.locks = node.locks.copy()
        upper.last_access, upper.created, upper.hits = node.last_access, node.created, node.hits
        upper.priority, upper.ttl = node.priority, node.ttl
        if node.hashes is not None:
            pages = upper_length // self.page_size
            upper.hashes, node.hashes = node.hashes[:pages], node.hashes[pages:]
        node.key, node.start, node.length = node.key[cut:], node.start + upper_length, \
            node.length - upper_length
        node.parent = upper
        parent.children[upper.key[: self.page_bytes]] = upper
        upper.children[node.key[: self.page_bytes]] = node
        self.nodes[upper.id] = upper
        if self.copying and node.id in self.copying:  # the in-flight records follow the split
            records = self.copying[node.id]
            self.copying[upper.id] = list(records)
            for record in records:
                record.follow(node, upper, self.tiers[record.tier])
        self._refresh(upper)
        self._refresh(node)
        return upper

    def _add_leaf(self, parent: Node, key: bytes, priority: int, ttl: int) -> Node:
        """A new node of ``key`` below ``parent``, holding no value yet, stamped now."""
        # bench insert: the parent's end read inline (no property call)
        leaf = Node(next(self._ids), parent, key, parent.start + parent.length,
                    len(key) // self.unit, len(self.components), parent.namespace, self.tier_count)
        leaf.created = leaf.last_access = self.tick
        leaf.priority, leaf.ttl = priority, ttl
        parent.children[key[: self.page_bytes]] = leaf
        self.nodes[leaf.id] = leaf
        for tier in self.tiers:  # bench insert: no range() per tier
            holes = tier.holes
            for index in self._indices:
                holes[index] += 1
        return leaf

    def _drop_root(self, root: Node) -> None:
        """Forget an empty namespace (per-request salts would otherwise pile up roots)."""
        del self.roots[root.namespace]
        del self.nodes[root.id]

    def _loading_start(self, key: bytes, namespace: Namespace) -> int | None:
        """Where the first node ``key`` runs through that a load-back is writing to starts
        (``None``: none); pure, O(depth)."""
        root = self.roots.get(namespace)
        if root is None:
            return None
        for node in self._walk(root, key)[0]:
            if any(record.tier == DEVICE for record in self.copying.get(node.id, ())):
                return node.start
        return None

    def _common_prefix(self, edge: bytes, key: bytes, pos: int, stop: int) -> int:
        """Bytes shared by ``edge`` and ``key[pos:stop]`` (whole pages, at least the first),
        found by halving: only the still-unknown middle segment is compared each round."""
        page_bytes = self.page_bytes
        low = 1
        high = min(len(edge), stop - pos) // page_bytes
        while low < high:
            mid = (low + high + 1) // 2
            a, b = low * page_bytes, mid * page_bytes
            if edge[a:b] == key[pos + a : pos + b]:
                low = mid
            else:
                high = mid - 1
        return low * page_bytes

    def _walk(self, root: Node, key: bytes) -> tuple[list[Node], int]:
        """The nodes ``key`` runs through from its namespace's ``root`` (its whole pages),
        and the byte position where it leaves the tree; pure, O(depth). The walk is
        :meth:`TreeCore.match`'s (no bound test: see there)."""
        page_bytes, pos, path, node = self.page_bytes, 0, [], root
        while True:
            child = node.children.get(key[pos : pos + page_bytes])
            if child is None:
                break
            path.append(child)
            if not key.startswith(child.key, pos):
                pos += self._common_prefix(child.key, key, pos, len(key))
                break
            pos = child.stop
            node = child
        return path, pos

    @staticmethod
    def _join(parts: list[np.ndarray]) -> np.ndarray:
        if not parts:
            return NO_SLOTS
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
