"""Insert and split: how keys and the callers' slots enter the tree."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from ..errors import InvalidSlotsError
from .keys import Namespace
from .node import Node
from .state import NO_SLOTS, TreeState
from .types import Lock, TreeInsert


class Inserter:
    """The insert path of a tree: a part of :class:`~radixkv.core.tree.TreeCore`, built on
    its :class:`TreeState` (whose containers it keeps references to)."""

    def __init__(self, state: TreeState) -> None:
        self._state = state
        """The tree's data; the clock (``tick``) is read and advanced there."""
        self.components = state.components
        self._count = len(state.components)
        self._default_ttl = state.config.default_ttl
        self.policy = state.policy
        self.tiers = state.tiers
        self.unit, self.page_bytes = state.unit, state.page_bytes
        self.live_locks = state.live_locks
        self.copying = state.copying
        # bench insert: the state's bookkeeping bound once (calls cost what self's did)
        self._root = state.root
        self._split = state._split
        self._set_value = state._set_value
        self._refresh = state._refresh
        self._add_leaf = state._add_leaf
        self._loading_start = state._loading_start
        self._common_prefix = state._common_prefix

    def insert(
        self,
        key: bytes,
        inputs: Sequence[object],
        namespace: Namespace,
        *,
        borrowed: int = 0,
        priority: int = 0,
        ttl: int | None = None,
        known: Lock | None = None,
    ) -> TreeInsert:
        """Insert ``key`` (whole pages) with each component's input (see its ``adopt_path``).

        Each component adopts what the tree lacks (new nodes, revival of evicted values or
        tombstones) and returns the caller's duplicates in ``freed`` — never positions below
        ``borrowed``, which the caller borrowed from the tree. Components may cut the key
        short (``length``) and ask for node boundaries (checkpoints); splits happen only
        there and where the key leaves an edge. Cost: O(depth) plus O(new elements) in C.
        The key is also cut at the first node a load-back is still writing to: should that
        copy fail, nothing may hang below the node it leaves host-only. ``known``: a live
        lock of this tree whose node the key's first ``borrowed`` elements are known to run
        to (a lease's); the descent starts at that node rather than at the root, the nodes
        above it only stamped (used only when it ends at ``borrowed`` in ``namespace`` and
        every cut above it is a node boundary already).
        Raises :class:`InvalidSlotsError` (nothing changed) on malformed inputs.
        """
        length = self._check_insert(key, inputs)
        limit, cuts = self._plan(inputs, length, borrowed)
        if self.copying:  # nothing is cached below a node still loading (it could fail)
            loading = self._loading_start(key, namespace)
            if loading is not None and loading < limit:
                limit = max(loading, borrowed)
                cuts = [p for p in cuts if p < limit] + [limit]
        self._state.tick = tick = self._state.tick + 1
        if not limit:  # nothing to cache: no namespace root is created for it
            return TreeInsert(None, 0, 0, [NO_SLOTS] * len(self.components))
        ttl = self._default_ttl if ttl is None else ttl
        # bench release / sim: a lease's borrowed prefix is not walked again
        if known is not None and self._known_start(known, namespace, borrowed, limit, cuts):
            node = known.node
            if self._borrowed_unread:  # bench sim (896 tokens, p16): stamped, not listed, and
                _stamp_up(node, tick, priority)  # not walked again by the adoption
                path = []
            else:
                path = _stamped_path(node, tick, priority)
        else:
            path, node = [], self._root(namespace)
        new_length = self._descend(node, path, key, limit, cuts, priority, ttl, tick)
        freed = self._adopt(path, inputs, borrowed)
        return TreeInsert(path[-1] if path else node, limit, new_length, freed)

    def _known_start(self, known: Lock, namespace: Namespace, borrowed: int, limit: int,
                     cuts: list[int]) -> bool:
        """Whether an insert may start at ``known``'s node (see :meth:`insert`)."""
        node = known.node
        return (self.live_locks.get(known.id) is known and node.namespace == namespace
                and node.start + node.length == borrowed <= limit
                and (borrowed <= cuts[0] or _bounds_every_cut(node, cuts, borrowed)))

    def _descend(
        self, node: Node, path: list[Node], key: bytes, limit: int, cuts: list[int],
        priority: int, ttl: int, tick: int,
    ) -> int:
        """Extend ``path`` (the nodes from the root down to ``node``, where the key runs)
        with the nodes that cover the rest of ``key[:limit]``, splitting where the key
        leaves an edge or a cut falls inside one and adding a leaf for what the tree lacks;
        returns how many elements were new. Marks each node accessed at ``tick`` (recency,
        priority)."""
        unit, page_bytes = self.unit, self.page_bytes
        single = len(cuts) == 1  # bench insert: no checkpoint, no bisect per node
        # bench insert: positions are bytes; a node's byte end is its ``stop``
        pos, new_length, end = node.stop, 0, limit * unit
        while pos < end:
            stop = end if single else cuts[bisect.bisect_right(cuts, pos // unit)] * unit
            child = node.children.get(key[pos : pos + page_bytes])
            if child is None:
                child = self._add_leaf(node, key[pos:stop], priority, ttl)
                new_length += child.length
            else:
                edge = child.key
                if pos + len(edge) > stop or not key.startswith(edge, pos):
                    shared = self._common_prefix(edge, key, pos, stop) // unit
                    child = self._split(child, shared)
            child.last_access = tick
            if priority > child.priority:
                child.priority = priority
            path.append(child)
            node = child
            pos = child.stop
        return new_length

    def _adopt(
        self, path: list[Node], inputs: Sequence[object], borrowed: int
    ) -> list[np.ndarray]:
        """Let each component adopt along ``path`` (values set, queues refreshed); return
        per component the caller's slots to free. ``path`` may leave out nodes above the
        new ones that end at or before ``borrowed`` (see :attr:`_borrowed_unread`)."""
        freed: list[np.ndarray] = []
        changed: dict[int, Node] = {}
        for component, data in zip(self.components, inputs):
            adopted, duplicates = component.adopt_path(path, data, borrowed)
            index = component.index
            for node, value in adopted:
                self._set_value(node, index, value)
                changed[node.id] = node
            freed.append(duplicates)
        if not self.policy.monotone:
            for queue in [queue for tier in self.tiers for queue in tier.queues]:
                for node in path:
                    queue.touch(node)
        for node in list(changed.values()):
            assert node.parent is not None
            changed.setdefault(node.parent.id, node.parent)
        for node in changed.values():
            self._refresh(node)
        return freed

    def _check_insert(self, key: bytes, inputs: Sequence[object]) -> int:
        if len(key) % self.page_bytes:
            raise InvalidSlotsError("insert key must be a whole number of pages")
        if len(inputs) != self._count:  # bench insert: the count read, not computed
            raise InvalidSlotsError(f"expected {self._count} component inputs, got {len(inputs)}")
        length = len(key) // self.unit
        for component, data in zip(self.components, inputs):
            component.check_input(data, length)
        return length

    def _plan(self, inputs: Sequence[object], length: int, borrowed: int) -> tuple[int, list[int]]:
        """How far to insert, and the sorted positions that must become node boundaries
        (always ending with the limit itself)."""
        if self._plans_nothing:  # bench insert (short, p1): FULL alone, 1.8 -> 0.1 us
            return length, [length]
        pairs = list(zip(self.components, inputs))
        limit = length
        while True:  # a component may cut shorter once another has cut: to a fixpoint
            cut = min([component.insert_limit(data, limit, borrowed) for component, data in pairs])
            if cut == limit:
                break
            limit = cut
        cuts = [limit]
        for component, data in pairs:
            cuts.extend(p for p in component.cut_points(data, limit, borrowed) if 0 < p < limit)
        # bench insert: without checkpoints the list is just [limit], nothing to sort
        return limit, cuts if len(cuts) == 1 else sorted(set(cuts))

    @cached_property
    def _borrowed_unread(self) -> bool:
        """Whether an insert reads nothing of the nodes a lease borrowed but their stamps:
        every component adopts past ``borrowed`` only and the policy never re-keys a
        candidate on access (monotone). Asked once per tree."""
        return self.policy.monotone and all(c.adopts_past_borrowed for c in self.components)

    @cached_property
    def _plans_nothing(self) -> bool:
        """Whether no component cuts an insert short or asks for a node boundary (each
        keeps the default ``insert_limit`` and ``cut_points``): the plan is then the
        whole key. Asked once per tree (its components are fixed)."""
        from ..components.base import Component  # components import this package

        return all(getattr(c.insert_limit, "__func__", None) is Component.insert_limit
                   and getattr(c.cut_points, "__func__", None) is Component.cut_points
                   for c in self.components)


def _stamped_path(node: Node, tick: int, priority: int) -> list[Node]:
    """``node`` and its ancestors below the root, top-down, each stamped as a descent
    stamps the nodes it runs through (recency, priority)."""
    path = []
    while node.parent is not None:
        node.last_access = tick
        if priority > node.priority:
            node.priority = priority
        path.append(node)
        node = node.parent
    path.reverse()
    return path


def _stamp_up(node: Node, tick: int, priority: int) -> None:
    """Stamp ``node`` and its ancestors below the root as a descent stamps the nodes it runs
    through (recency, priority): :func:`_stamped_path` without the list."""
    while node.parent is not None:
        node.last_access = tick
        if priority > node.priority:
            node.priority = priority
        node = node.parent


def _bounds_every_cut(node: Node, cuts: list[int], borrowed: int) -> bool:
    """Whether every cut below ``borrowed`` is where a node on the path to ``node`` starts
    (so a descent from the root would split nothing there). O(depth)."""
    starts = set()
    while node.parent is not None:
        starts.add(node.start)
        node = node.parent
    return all(cut in starts for cut in cuts if cut < borrowed)
