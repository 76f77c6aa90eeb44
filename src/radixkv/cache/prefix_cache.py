"""PrefixCache: the controller that owns the pools and drives the tree for a scheduler."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..components.full import FullComponent
from ..core.audit import check_tree, snapshot_tree
from ..core.events import KVEvent
from ..core.keys import pack_tokens, validate_namespace, validate_tokens
from ..core.node import Node
from ..core.tree import TreeCore
from ..core.types import Lock, NodeId, TreeMatch
from ..errors import InvalidArgumentError, InvariantError, LeaseError, OutOfSlotsError
from ..memory import SlotPool, SlotPoolConfig
from .config import CacheConfig
from .lease import Lease, LeaseState
from .results import CacheStats, ComponentStats, MatchResult

FULL = 0
"""Index of the FULL component: always the first."""


class PrefixCache:
    """Prefix cache of one serving engine: a radix tree over token ids plus its slot pools.

    Request life-cycle: :meth:`admit` (match, lock, allocate) → :meth:`extend` (decode
    tokens) / :meth:`commit` (chunked prefill) → :meth:`finish` or :meth:`abort`.
    Every method validates before it mutates: when it raises, the cache is as it was.
    """

    def __init__(self, config: CacheConfig) -> None:
        if not isinstance(config, CacheConfig):
            raise TypeError(f"expected a CacheConfig, got {type(config).__name__}")
        self.config = config
        self.page_size = config.page_size
        self.tree = TreeCore(config.tree_config(), [FullComponent()])
        self.pool = SlotPool(SlotPoolConfig(capacity=config.capacity, page_size=config.page_size))
        self._owner = object()
        self._lease_ids = itertools.count(1)
        self._leases: dict[int, Lease] = {}
        self._counters = dict.fromkeys(
            ("matches", "match_tokens", "hit_tokens", "admitted", "finished", "aborted",
             "inserted_tokens", "evicted_tokens"), 0)

    # ------------------------------------------------------------------ keys

    def _key(self, tokens: np.ndarray, length: int | None = None) -> bytes:
        """Packed key of the first ``length`` tokens, cut down to whole pages."""
        key = pack_tokens(tokens if length is None else tokens[:length], self.config.bigram)
        page_bytes = self.tree.page_bytes
        return key[: len(key) - len(key) % page_bytes]

    # ------------------------------------------------------------------ match

    def match(self, tokens: Any, namespace: Any = None) -> MatchResult:
        """Longest cached prefix of ``tokens`` usable by every component.

        Never changes the tree's structure; refreshes recency along the prefix and counts a
        hit. Cost O(depth) plus one concatenation of the prefix slots. Raises
        :class:`InvalidTokensError` / :class:`InvalidNamespaceError` on bad input.
        """
        array = validate_tokens(tokens)
        found = self.tree.match(self._key(array), validate_namespace(namespace))
        self._count_match(len(array), found.length)
        return MatchResult(
            length=found.length,
            slots=self.tree.path_values(found, FULL),
            node=None if found.node is None else NodeId(found.node.id),
        )

    def _count_match(self, queried: int, hit: int) -> None:
        counters = self._counters
        counters["matches"] += 1
        counters["match_tokens"] += queried
        counters["hit_tokens"] += hit

    # ------------------------------------------------------------------ admission

    def admit(
        self, tokens: Any, namespace: Any = None, *, priority: int = 0, ttl: int | None = None
    ) -> Lease:
        """Admit a request: match its prompt, lock the cached prefix, allocate the rest.

        Evicts as needed. Raises :class:`OutOfSlotsError` (nothing changed, not even recency)
        when even evicting everything evictable cannot make room.
        """
        array = validate_tokens(tokens)
        space = validate_namespace(namespace)
        _check_int("priority", priority)
        if ttl is not None:
            _check_int("ttl", ttl, minimum=0)
        found = self.tree.match(self._key(array), space, touch=False)
        fresh = self._pages_for(len(array) - found.length)
        self._ensure_room(fresh, exclude=found)
        self.tree.touch(found)
        self._count_match(len(array), found.length)
        lock = self.tree.lock(found.node) if found.node is not None else None
        slots = np.concatenate((self.tree.path_values(found, FULL), self._allocate(fresh)))
        lease = Lease(self._owner, next(self._lease_ids), space, array, slots, found.length,
                      lock, priority, ttl)
        self._leases[lease.id] = lease
        self._counters["admitted"] += 1
        return lease

    def _pages_for(self, num_tokens: int) -> int:
        """Slots (whole pages) needed for ``num_tokens`` tokens."""
        page = self.page_size
        return -(-num_tokens // page) * page

    def _ensure_room(self, slots_needed: int, exclude: TreeMatch | None = None) -> None:
        """Raise OutOfSlotsError unless free + evictable (minus what ``exclude`` will lock)
        covers ``slots_needed``; pure."""
        available = self.pool.available
        if slots_needed <= available:
            return
        evictable = self.tree.cached[FULL] - self.tree.protected[FULL]
        if exclude is not None:
            evictable -= self.tree.unlocked_on_path(exclude, FULL)
        if available + evictable < slots_needed:
            raise OutOfSlotsError(
                f"need {slots_needed} slots but only {available} are free and "
                f"{evictable} evictable (capacity {self.pool.capacity})"
            )

    def _allocate(self, slots_needed: int) -> np.ndarray:
        """Allocate whole pages, evicting first if short; room was ensured beforehand."""
        short = slots_needed - self.pool.available
        if short > 0:
            self.evict(short)
        slots = self.pool.alloc(slots_needed)
        if slots is None:  # _ensure_room proved this cannot happen
            raise InvariantError(f"could not allocate {slots_needed} slots after eviction")
        return slots

    # ------------------------------------------------------------------ life-cycle

    def extend(self, lease: Lease, tokens: Any) -> np.ndarray:
        """Append decode tokens to an active lease; return their slots (a copy).

        Allocates a page only when the lease's last page is full, evicting if needed.
        Raises :class:`LeaseError`, :class:`InvalidTokensError` or :class:`OutOfSlotsError`
        with nothing changed.
        """
        self._check_active(lease)
        array = validate_tokens(tokens)
        start = lease.num_tokens
        fresh = self._pages_for(start + len(array)) - len(lease.allocated_slots)
        fresh = max(fresh, 0)
        self._ensure_room(fresh)
        lease.append(array, self._allocate(fresh))
        new_slots: np.ndarray = lease.slots[start:].copy()
        return new_slots

    def commit(self, lease: Lease, length: int | None = None) -> int:
        """Insert the first ``length`` tokens (default: all so far) of an active lease and
        move its lock to the end of what is now cached (chunked prefill). Returns how many
        tokens the tree now holds for the lease (whole pages). Duplicate slots are freed and
        the lease's slots are rewritten to the tree's."""
        self._check_active(lease)
        length = lease.num_tokens if length is None else length
        _check_int("length", length, minimum=0, maximum=lease.num_tokens)
        cached, end = self._insert(lease, length)
        if end is not None:
            new_lock = self.tree.lock(end)
            self._unlock(lease)
            lease.lock = new_lock
            lease.adopt_prefix(self.tree.prefix_values(end, FULL)[:cached])
        return lease.tree_owned

    def finish(self, lease: Lease) -> int:
        """Insert every whole page of an active lease, free its duplicate slots and its
        partial tail page, and unlock. Returns how many of its tokens the tree now holds."""
        self._check_active(lease)
        cached = max(self._insert(lease, lease.num_tokens)[0], lease.tree_owned)
        self.pool.free(lease.allocated_slots[cached:])
        self._close(lease, LeaseState.FINISHED, "finished")
        return cached

    def abort(self, lease: Lease) -> None:
        """Drop an active lease: free the slots it holds and unlock what it borrowed."""
        self._check_active(lease)
        self.pool.free(lease.own_slots)
        self._close(lease, LeaseState.ABORTED, "aborted")

    def _insert(self, lease: Lease, length: int) -> tuple[int, Node | None]:
        """Insert the lease's first ``length`` tokens (whole pages); return the key length
        and the node it ends on (``None`` when nothing beyond the tree-owned prefix)."""
        key = self._key(lease.tokens, length)
        key_length = len(key) // self.tree.unit
        if key_length <= lease.tree_owned:
            return key_length, None
        result = self.tree.insert(
            key, [lease.allocated_slots[:key_length]], lease.namespace,
            borrowed=lease.tree_owned, priority=lease.priority, ttl=lease.ttl,
        )
        self.pool.free(result.freed[FULL])
        self._counters["inserted_tokens"] += result.new_length
        return key_length, result.node

    def _close(self, lease: Lease, state: LeaseState, counter: str) -> None:
        self._unlock(lease)
        lease.state = state
        del self._leases[lease.id]
        self._counters[counter] += 1

    def _unlock(self, lease: Lease) -> None:
        if lease.lock is not None:
            self.tree.unlock(lease.lock)
            lease.lock = None

    def _check_active(self, lease: Lease) -> None:
        if not isinstance(lease, Lease):
            raise LeaseError(f"expected a Lease, got {type(lease).__name__}")
        if lease.owner is not self._owner:
            raise LeaseError(f"lease {lease.id} was issued by another cache")
        if lease.state is not LeaseState.ACTIVE:
            raise LeaseError(f"lease {lease.id} is {lease.state.value}, not active")

    # ------------------------------------------------------------------ locks, eviction

    def lock(self, node: NodeId) -> Lock:
        """Pin the prefix ending at ``node`` so it cannot be evicted; O(depth).
        Raises :class:`StaleHandleError` if the node is gone."""
        return self.tree.lock(self.tree.node(node))

    def unlock(self, receipt: Lock) -> None:
        """Undo exactly what ``receipt`` pinned. Raises :class:`LockError` when it was
        already released or belongs to another cache."""
        self.tree.unlock(receipt)

    def evict(self, num_tokens: int) -> int:
        """Evict at least ``num_tokens`` cached tokens in policy order (or all evictable);
        return how many were freed."""
        _check_int("num_tokens", num_tokens, minimum=0)
        result = self.tree.evict([num_tokens])
        self.pool.free(result.freed[FULL])
        self._counters["evicted_tokens"] += result.evicted[FULL]
        return result.evicted[FULL]

    # ------------------------------------------------------------------ inspection

    def stats(self) -> CacheStats:
        """Counters and size ledgers; O(components)."""
        tree = self.tree
        components = {
            component.kind: ComponentStats(
                cached=tree.cached[component.index],
                evictable=tree.cached[component.index] - tree.protected[component.index],
                protected=tree.protected[component.index],
            )
            for component in tree.components
        }
        return CacheStats(
            capacity=self.pool.capacity,
            available=self.pool.available,
            held_by_requests=sum(len(lease.own_slots) for lease in self._leases.values()),
            components=components,
            nodes=len(tree.nodes) - len(tree.roots),
            active_leases=len(self._leases),
            **self._counters,
        )

    def take_events(self) -> list[KVEvent]:
        """Drain the tree's queued KV events (empty when events are off)."""
        return self.tree.take_events()

    def reset(self) -> None:
        """Drop everything cached; active leases become invalid, every slot is free again.
        Node handles are never reused afterwards."""
        self.tree.reset()
        self.pool.reset()
        for lease in self._leases.values():
            lease.state = LeaseState.INVALIDATED
            lease.lock = None
        self._leases.clear()

    def check_invariants(self) -> None:
        """Audit tree, pool and leases from scratch; raise :class:`InvariantError` on any
        inconsistency. O(nodes + slots)."""
        check_tree(self.tree)
        held = [self.tree.all_values(FULL)]
        for lease in self._leases.values():
            self._check_lease(lease)
            held.append(lease.own_slots)
        self.pool.check(np.concatenate(held))

    def _check_lease(self, lease: Lease) -> None:
        if lease.lock is not None:
            self.tree.check_receipt(lease.lock)
        if lease.tree_owned:
            assert lease.lock is not None
            tree_slots = self.tree.prefix_values(lease.lock.node, FULL)[: lease.tree_owned]
            if not np.array_equal(tree_slots, lease.allocated_slots[: lease.tree_owned]):
                raise InvariantError(f"lease {lease.id} disagrees with the tree on its prefix")
        if len(lease.allocated_slots) != self._pages_for(lease.num_tokens):
            raise InvariantError(f"lease {lease.id} holds the wrong number of pages")

    def snapshot(self) -> Any:
        """The whole observable state as plain data (tree, pool, leases, counters)."""
        leases = tuple(
            (lease.id, lease.state.value, lease.key_tokens(), lease.allocated_slots.tobytes(),
             lease.tree_owned, None if lease.lock is None else lease.lock.id)
            for lease in self._leases.values()
        )
        return (snapshot_tree(self.tree), self.pool.snapshot(), leases,
                tuple(sorted(self._counters.items())))

    def leases(self) -> list[Lease]:
        """Active leases, oldest first."""
        return list(self._leases.values())


def _check_int(
    name: str, value: object, *, minimum: int | None = None, maximum: int | None = None
) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{name} must be an int, got {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise InvalidArgumentError(f"{name}={value} is outside [{minimum}, {maximum}]")
