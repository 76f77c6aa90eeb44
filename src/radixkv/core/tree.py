"""TreeCore: the component-agnostic radix tree over packed keys.

The tree knows keys, structure, locks, recency, candidate queues and size ledgers. It never
frees memory and never does I/O: operations return the slots that became free, and the
caller (the controller) gives them back to its pools. Per-component meaning comes from the
:class:`~radixkv.components.base.Component` hooks; the tree never asks a component its kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidSlotsError
from .attach import Attacher
from .bound_verbs import refuse_hiding
from .copy_plans import CopyPlanner
from .events import AllBlocksCleared, KVEvent
from .eviction import Evictor
from .insertion import Inserter
from .keys import Namespace
from .locking import Locker
from .node import Node
from .state import TreeState
from .tiers import DEVICE
from .tree_config import TreeConfig
from .types import NodeId, TreeMatch

if TYPE_CHECKING:  # components import the node module of this package
    from ..components.base import Component


def _present(path: Sequence[Node], index: int) -> list[np.ndarray]:
    """Component ``index``'s values along ``path``; raises if one is missing."""
    values = []
    for node in path:
        value = node.values[index]
        if value is None:
            raise InvalidSlotsError(f"component {index} has no value on node {node.id}")
        values.append(value)
    return values


class TreeCore(TreeState):
    """A radix tree of pages of key elements with per-component values.

    Keys are ``bytes`` of whole pages (``page_size * unit`` bytes a page; ``unit`` is 4, or 8
    with bigram keys). Every public method validates before it mutates: when it raises, the
    tree is unchanged. The tree's data is its :class:`~radixkv.core.state.TreeState`; match
    is its own, and the other operations are parts built on that state, each in its own
    module: :attr:`inserter`, :attr:`locker`, :attr:`evictor`, :attr:`copies` (what the
    controllers of the tiers below the device call) and :attr:`attacher`.
    """

    BOUND_VERBS = ("insert", "lock", "lock_match", "move_down", "unlock", "evict")
    """The parts' methods a tree binds under its own names at construction."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Refuse a subclass that defines a bound verb (see :func:`refuse_hiding`)."""
        super().__init_subclass__(**kwargs)
        refuse_hiding(cls, TreeCore.BOUND_VERBS, "tree")

    def __init__(self, config: TreeConfig, components: Sequence[Component]) -> None:
        super().__init__(config, components)
        self.inserter = Inserter(self)
        self.locker = Locker(self)
        self.evictor = Evictor(self)
        self.copies = CopyPlanner(self)
        """Backup and load-back plans, and values placed, taken back and announced around
        a copy on any tier (:class:`~radixkv.core.copy_plans.CopyPlanner`)."""
        self.attacher = Attacher(self, self.copies)
        # the hot verbs bound once: a forwarding method would add a Python call to every
        # insert, lock, unlock and evict (bench opcodes: about 10 instructions each), and
        # ``tree.locker.lock_match`` an attribute read to every admit (admit_finish 1327
        # -> 1328); their contracts are stated on the parts' methods
        self.insert = self.inserter.insert
        self.lock = self.locker.lock
        self.lock_match = self.locker.lock_match
        self.move_down = self.locker.move_down
        self.unlock = self.locker.unlock
        self.evict = self.evictor.evict

    # ------------------------------------------------------------------ match

    def match(self, key: bytes, namespace: Namespace, *, touch: bool = True) -> TreeMatch:
        """Longest prefix of ``key`` usable by every component; never changes structure.

        A trailing partial page of ``key`` is ignored. With ``touch`` the covered nodes are
        accessed and hit (recency, hit counts). Cost: O(depth) dict gets and bytes compares,
        plus O(log) halving at the mismatch.
        """
        length, path, branch = self.match_parts(key, namespace, touch)
        return TreeMatch(length, path[-1] if path else None, path, branch)

    def match_parts(self, key: bytes, namespace: Namespace,
                    touch: bool = True) -> tuple[int, list[Node], int]:
        """:meth:`match` as a plain tuple ``(length, path, branch)``, the fields of its
        :class:`TreeMatch` but the node (the path's last); the form a hot caller takes (bench
        match_prefix: no result object built and read back, 576 -> 557 instructions)."""
        node = self.roots.get(namespace)
        if node is None:
            return 0, [], 0
        # bench match_prefix: the walk is inlined (one call less per match), runs over the
        # key in place (no copy) and needs no bound test: past the last whole page the slice
        # is shorter than a page and finds no child
        page_bytes, pos = self.page_bytes, 0
        path: list[Node] = []
        append = path.append
        while True:
            child = node.children.get(key[pos : pos + page_bytes])
            if child is None:
                break
            append(child)
            if not key.startswith(child.key, pos):
                pos += self._common_prefix(child.key, key, pos, len(key))
                break
            pos = child.stop
            node = child
        matched = pos // self.unit
        # bench match_prefix: with no hole anywhere nothing can cut the structural match
        length = matched if self._whole_all and not any(self.holes) else \
            self._usable(path, matched)
        if length < matched:
            path = [node for node in path if node.start < length]
        if touch and path:
            self._access(path)
        return length, path, matched

    def _usable(self, path: list[Node], length: int) -> int:
        """Largest length every component accepts: each component lowers the candidate to
        the largest length it accepts below it, until none objects (a fixpoint)."""
        holes, checks = self.holes, self._never_whole
        for component in self._whole_when_complete:
            if holes[component.index]:  # it may cut too
                checks = [c for c in self.components
                          if holes[c.index] or not c.whole_when_complete]
                break
        if len(checks) == 1:  # bench match_prefix (MAMBA): one answer is its own fixpoint
            return checks[0].usable_length(path, length)
        while True:
            candidate = length
            for component in checks:
                candidate = component.usable_length(path, candidate)
            if candidate == length:
                return length
            length = candidate

    def _access(self, path: Sequence[Node]) -> None:
        """Refresh the recency of ``path``'s nodes and count a hit on each."""
        self.tick = tick = self.tick + 1
        for node in path:
            node.last_access = tick
            node.hits += 1
        if self.policy.monotone:  # bench match_prefix: queues re-key lazily at pop
            return
        last, queues = path[-1], self.queues
        for tier in self.lower:
            for queue in tier.queues:
                for node in path:
                    queue.touch(node)
        for component, queue in zip(self.components, queues):
            # bench match_prefix: a leaf-only component can only hold the last node
            leaf_only = component.leaf_candidates and not self.holes[component.index]
            for node in (last,) if leaf_only else path:
                if node.id in queue.members:
                    queue.touch(node)

    def path_values(self, match: TreeMatch, index: int, start: int = 0) -> np.ndarray:
        """Component ``index``'s values on the match path from node boundary ``start`` to
        the match length, concatenated once (a fresh array); ``start`` must be the start of a
        path node (or 0). Raises :class:`InvalidSlotsError` if a value there is missing."""
        values = _present([node for node in match.path if node.start >= start], index)
        if not values:
            return np.zeros(0, dtype=np.int64)
        joined: np.ndarray = np.concatenate(values)
        return joined[: match.length - start]

    def values_between(self, node: Node, index: int, start: int) -> np.ndarray:
        """Component ``index``'s values for key positions ``[start, node.end)`` on the path
        ending at ``node``; O(depth). Raises :class:`InvalidSlotsError` if one is missing."""
        path = []
        while node.parent is not None and node.end > start:
            path.append(node)
            node = node.parent
        if not path:
            return np.zeros(0, dtype=np.int64)
        path.reverse()
        joined: np.ndarray = np.concatenate(_present(path, index))
        return joined[start - path[0].start :]

    def touch(self, match: TreeMatch) -> None:
        """Access and hit the nodes of a match made with ``touch=False``."""
        if match.path:
            self._access(match.path)

    # ------------------------------------------------------------------ reset / events

    def reset(self) -> list[np.ndarray]:
        """Drop every node and lock; return per component every device slot the tree held
        (the caller resets its host pools whole).

        Handles stay unique afterwards (ids keep counting); old handles and receipts become
        stale. Queues AllBlocksCleared when events are on."""
        held = [self.all_values(index) for index in range(len(self.components))]
        self._clear()
        if self.log.enabled:
            self.log.push(AllBlocksCleared())
        return held

    def all_values(self, index: int, tier: int = DEVICE) -> np.ndarray:
        """Every slot component ``index`` holds in the tree on ``tier``, concatenated;
        O(nodes)."""
        slot = self.tiers[tier].slot(index)
        parts = [n.values[slot] for n in self.nodes.values()]
        return self._join([part for part in parts if part is not None])

    def take_events(self) -> list[KVEvent]:
        """Drain the queued KV events, oldest first."""
        return self.log.take()

    def node_ids(self) -> list[NodeId]:
        """Handles of every live node, roots included."""
        return [NodeId(node_id) for node_id in self.nodes]
