"""PrefixCache: the controller that owns the pools and drives the tree for a scheduler."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..components.swa import WindowInput
from ..core.events import KVEvent
from ..core.keys import Namespace, pack_tokens, validate_namespace, validate_tokens
from ..core.node import Node
from ..core.tree import TreeCore
from ..core.types import Lock, NodeId, TreeInsert, TreeMatch
from ..errors import ConfigError, InvalidArgumentError, InvalidSlotsError, LeaseError
from ..memory import as_slot_array
from . import inspection
from .config import CacheConfig
from .detached import DetachedSlots
from .lease import Lease, LeaseState
from .pools import ComponentPools
from .results import CacheStats, MatchResult

FULL = 0
"""Index of the FULL component: always the first."""


class PrefixCache:
    """Prefix cache of one serving engine: a radix tree over token ids plus its slot pools.

    Request life-cycle: :meth:`admit` (match, lock, allocate) → :meth:`extend` (decode
    tokens) / :meth:`commit` (chunked prefill) / :meth:`checkpoint` (save a MAMBA state) /
    :meth:`slide_window` (release SWA slots that left the window) → :meth:`finish` or
    :meth:`abort`. Every method validates before it mutates: when it raises, the cache is as
    it was.
    """

    def __init__(self, config: CacheConfig) -> None:
        if not isinstance(config, CacheConfig):
            raise TypeError(f"expected a CacheConfig, got {type(config).__name__}")
        self.config = config
        self.page_size = config.page_size
        self.tree = TreeCore(config.tree_config(), config.make_components())
        self.pools = ComponentPools(config, self.tree)
        self.pool = self.pools[FULL]
        kinds = [component.kind for component in self.tree.components]
        self.swa = kinds.index("swa") if "swa" in kinds else None
        self.mamba = kinds.index("mamba") if "mamba" in kinds else None
        self._owner = object()
        self._lease_ids = itertools.count(1)
        self._leases: dict[int, Lease] = {}
        self.counters = dict.fromkeys(inspection.COUNTERS, 0)
        self.detached = DetachedSlots(self.pool.num_pages, self.page_size)

    # ------------------------------------------------------------------ keys and match

    def _key(self, tokens: np.ndarray, length: int | None = None) -> bytes:
        """Packed key of the first ``length`` tokens, cut down to whole pages."""
        key = pack_tokens(tokens if length is None else tokens[:length], self.config.bigram)
        return key[: len(key) - len(key) % self.tree.page_bytes]

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
            mamba_slot=self._state_at(found),
            checkpoint_hints=self._hints(found, len(array)),
        )

    def _count_match(self, queried: int, hit: int) -> None:
        self.counters["matches"] += 1
        self.counters["match_tokens"] += queried
        self.counters["hit_tokens"] += hit

    def _state_at(self, found: TreeMatch) -> int | None:
        if self.mamba is None or found.node is None:
            return None
        state = found.node.values[self.mamba]
        return None if state is None else int(state[0])

    def _hints(self, found: TreeMatch, num_tokens: int) -> tuple[int, ...]:
        """Where to save MAMBA states while prefilling: every track interval past the match,
        the branch point (where the prompt leaves the cached tree: the next request sharing
        this prefix branches there too), and the last page boundary of the prompt."""
        if self.mamba is None:
            return ()
        interval = self.config.mamba_track_interval
        assert interval is not None
        end = num_tokens - num_tokens % self.page_size
        hints = set(range(found.length - found.length % interval + interval, end + 1, interval))
        if found.length < found.branch < end:
            hints.add(found.branch)
        if end > found.length:
            hints.add(end)
        return tuple(sorted(hints))

    # ------------------------------------------------------------------ admission

    def admit(
        self, tokens: Any, namespace: Any = None, *, priority: int = 0, ttl: int | None = None
    ) -> Lease:
        """Admit a request: match its prompt, lock the cached prefix, allocate the rest (and,
        with MAMBA, a working state slot). Evicts as needed. Raises :class:`OutOfSlotsError`
        (nothing changed, not even recency) when even evicting everything evictable cannot
        make room."""
        array = validate_tokens(tokens)
        space = validate_namespace(namespace)
        _check_int("priority", priority)
        if ttl is not None:
            _check_int("ttl", ttl, minimum=0)
        found = self.tree.match(self._key(array), space, touch=False)
        needs = self._needs(self._pages_for(len(array) - found.length), state=1)
        self.pools.ensure_room(needs, self.tree.lock_preview(found.node, found.length))
        self.tree.touch(found)
        self._count_match(len(array), found.length)
        lock = None if found.node is None else self.tree.lock(found.node, found.length)
        lease = Lease(self._owner, next(self._lease_ids), space, found.length, lock,
                      priority, ttl)
        self._fill_admitted(lease, array, found, self.pools.allocate(needs))
        self._leases[lease.id] = lease
        self.counters["admitted"] += 1
        return lease

    def _needs(self, fresh: int, state: int = 0) -> list[int]:
        """Slots each pool must provide for ``fresh`` new token slots and ``state`` states."""
        needs = [fresh] * len(self.tree.components)
        if self.mamba is not None:
            needs[self.mamba] = state
        return needs

    def _fill_admitted(
        self, lease: Lease, tokens: np.ndarray, found: TreeMatch, fresh: list[np.ndarray]
    ) -> None:
        full = np.concatenate((self.tree.path_values(found, FULL), fresh[FULL]))
        swa = None
        if self.swa is not None:
            lease.window_start = self._window_start(lease)
            swa = np.zeros(len(full), dtype=np.int64)
            swa[lease.window_start : found.length] = self.tree.path_values(
                found, self.swa, lease.window_start)
            swa[found.length :] = fresh[self.swa]
        lease.append(tokens, full, swa)
        if self.mamba is not None:
            lease.state_slot = int(fresh[self.mamba][0])
            lease.copy_state_from = self._state_at(found)
            lease.checkpoint_hints = self._hints(found, len(tokens))
            self.counters["checkpoints_used"] += lease.copy_state_from is not None

    def _window_start(self, lease: Lease) -> int:
        """First position of the SWA window the lease's lock pins."""
        assert self.swa is not None
        return 0 if lease.lock is None else lease.lock.boundaries[self.swa]

    def _pages_for(self, num_tokens: int) -> int:
        """Slots (whole pages) needed for ``num_tokens`` tokens."""
        page = self.page_size
        return -(-num_tokens // page) * page

    # ------------------------------------------------------------------ running requests

    def extend(self, lease: Lease, tokens: Any) -> np.ndarray:
        """Append decode tokens to an active lease; return their FULL slots (a copy).

        Allocates a page (FULL, and SWA alongside) only when the lease's last page is full,
        evicting if needed. Raises :class:`LeaseError`, :class:`InvalidTokensError` or
        :class:`OutOfSlotsError` with nothing changed.
        """
        self._check_active(lease)
        array = validate_tokens(tokens)
        start = lease.num_tokens
        fresh = max(0, self._pages_for(start + len(array)) - len(lease.allocated_slots))
        needs = self._needs(fresh)
        self.pools.ensure_room(needs)
        slots = self.pools.allocate(needs)
        lease.append(array, slots[FULL], None if self.swa is None else slots[self.swa])
        new_slots: np.ndarray = lease.slots[start:].copy()
        return new_slots

    def slide_window(self, lease: Lease) -> int:
        """Release the lease's own SWA pages that lie wholly before the last W tokens of what
        the lease could cache now (its whole pages of key): those left the window and will
        be cached as tombstones. Returns the slots released."""
        self._check_active(lease)
        if self.swa is None:
            raise LeaseError("this cache has no SWA component")
        window = self.config.sliding_window
        assert window is not None
        # keep the window of the longest prefix finish could cache now (whole pages of key)
        cacheable = len(self._key(lease.tokens)) // self.tree.unit
        dropped = max(0, cacheable - window)
        dropped -= dropped % self.page_size
        held_from = max(lease.tree_owned, lease.swa_dropped)
        if dropped <= lease.swa_dropped:
            return 0
        released = lease.swa_buffer()[held_from:dropped] if dropped > held_from else None
        if released is not None:
            self.pools[self.swa].free(released)
        lease.swa_dropped = dropped
        return 0 if released is None else len(released)

    def checkpoint(self, lease: Lease, position: int) -> int:
        """Allocate a state slot for the MAMBA state after ``position`` tokens (a page
        boundary past what the tree holds for the lease); the engine saves the state there
        and the tree takes it at commit/finish. Raises :class:`OutOfSlotsError` when no
        state slot can be freed."""
        self._check_active(lease)
        if self.mamba is None:
            raise LeaseError("this cache has no MAMBA component")
        _check_int("position", position, minimum=lease.tree_owned + 1,
                   maximum=lease.num_tokens)
        if position % self.page_size or position in lease.checkpoints:
            raise InvalidArgumentError(
                f"checkpoint position {position} is not a page boundary or already saved")
        needs = self._needs(0, state=1)
        self.pools.ensure_room(needs)
        slot = int(self.pools.allocate(needs)[self.mamba][0])
        lease.checkpoints[position] = slot
        return slot

    def commit(self, lease: Lease, length: int | None = None) -> int:
        """Insert the first ``length`` tokens (default: all so far) of an active lease and
        move its lock to the end of what the tree now holds (chunked prefill); with MAMBA
        that is the last checkpoint. Duplicate slots are freed and the lease's slots are
        rewritten to the tree's. Returns how many tokens the tree holds for the lease."""
        self._check_active(lease)
        length = lease.num_tokens if length is None else length
        _check_int("length", length, minimum=0, maximum=lease.num_tokens)
        result = self._insert(lease, length)
        if result is not None and result.length > lease.tree_owned:
            self._move_lock(lease, result.node, result.length)
        return lease.tree_owned

    def _move_lock(self, lease: Lease, node: Node, length: int) -> None:
        new_lock = self.tree.lock(node, length)
        self._unlock(lease)
        lease.lock = new_lock
        lease.adopt_prefix(self.tree.prefix_values(node, FULL)[:length])
        if self.swa is not None:
            lease.window_start = self._window_start(lease)
            start = lease.swa_start
            if start < length:
                lease.set_swa(start, self.tree.values_between(node, self.swa, start))

    def finish(self, lease: Lease) -> int:
        """Insert every whole page of an active lease (with MAMBA: up to its last
        checkpoint), free its duplicates, its tail and its states, and unlock. Returns how
        many of its tokens the tree now holds."""
        self._check_active(lease)
        result = self._insert(lease, lease.num_tokens)
        cached = lease.tree_owned if result is None else max(result.length, lease.tree_owned)
        self._release(lease, cached)
        self._close(lease, LeaseState.FINISHED, "finished")
        return cached

    def abort(self, lease: Lease) -> None:
        """Drop an active lease: free every slot it holds and unlock what it borrowed."""
        self._check_active(lease)
        self._release(lease, lease.tree_owned)
        self._close(lease, LeaseState.ABORTED, "aborted")

    def _release(self, lease: Lease, cached: int) -> None:
        """Free what the lease holds beyond the first ``cached`` tokens."""
        freed: list[np.ndarray] = [lease.allocated_slots[cached:]]
        if self.swa is not None:
            freed.append(lease.swa_buffer()[max(cached, lease.swa_dropped):])
        if self.mamba is not None:
            states = [*lease.checkpoints.values(), lease.state_slot]
            freed.append(np.array([s for s in states if s is not None], dtype=np.int64))
            lease.checkpoints, lease.state_slot = {}, None
        self.pools.free_all(freed)

    def _insert(self, lease: Lease, length: int) -> TreeInsert | None:
        """Insert the lease's first ``length`` tokens (whole pages); ``None`` when there is
        nothing beyond what the tree already holds for it."""
        key = self._key(lease.tokens, length)
        key_length = len(key) // self.tree.unit
        if key_length <= lease.tree_owned:
            return None
        result = self.tree.insert(
            key, self._inputs(lease, key_length), lease.namespace,
            borrowed=lease.tree_owned, priority=lease.priority, ttl=lease.ttl,
        )
        self.pools.free_all(result.freed)
        if self.mamba is not None:
            used = [p for p in lease.checkpoints if p <= result.length]
            self.counters["checkpoints_created"] += len(used) - len(result.freed[self.mamba])
            for position in used:
                del lease.checkpoints[position]
        self.counters["inserted_tokens"] += result.new_length
        return result

    def _inputs(self, lease: Lease, key_length: int) -> list[object]:
        inputs: list[object] = [lease.allocated_slots[:key_length]]
        if self.swa is not None:
            slots = lease.swa_buffer()[:key_length]
            inputs.append(WindowInput(slots, min(lease.swa_dropped, key_length)))
        if self.mamba is not None:
            inputs.append({p: s for p, s in lease.checkpoints.items() if p <= key_length})
        return inputs

    def _close(self, lease: Lease, state: LeaseState, counter: str) -> None:
        self._unlock(lease)
        lease.state = state
        del self._leases[lease.id]
        self.counters[counter] += 1

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

    # ------------------------------------------------------------------ caller-held slots

    def allocate(self, num_tokens: int) -> np.ndarray:
        """Allocate FULL slots (whole pages) for ``num_tokens`` tokens to a caller that keeps
        its own request records, evicting as needed; the caller holds them until it passes
        them to :meth:`insert` or :meth:`release`. FULL-only caches; raises
        :class:`OutOfSlotsError` (nothing changed) when even eviction cannot make room."""
        self._check_full_only("allocate")
        _check_int("num_tokens", num_tokens, minimum=0)
        needs = [self._pages_for(num_tokens)]
        self.pools.ensure_room(needs)
        slots = self.pools.allocate(needs)[FULL]
        self.detached.mark(slots)
        return slots

    def release(self, slots: Any) -> None:
        """Give back caller-held slots from :meth:`allocate` unused (whole pages)."""
        array = as_slot_array(slots)
        self.detached.check(array)
        self.detached.unmark(array)
        self.pool.free(array)

    def insert(
        self, tokens: Any, slots: Any, namespace: Any = None, *, priority: int = 0,
        ttl: int | None = None,
    ) -> int:
        """Cache ``tokens`` with caller-held FULL ``slots`` (from :meth:`allocate`, one whole
        page per page of tokens; numpy array or torch tensor). The tree keeps what it lacks;
        duplicates of cached pages and the partial tail page go back to the pool, so the
        caller holds none of ``slots`` afterwards. Returns the tokens the tree holds for this
        key. Raises :class:`InvalidSlotsError` / :class:`InvalidSlotsTypeError` for slots of
        the wrong type, dtype or length, or not held by the caller (nothing changed)."""
        self._check_full_only("insert")
        array = validate_tokens(tokens)
        space = validate_namespace(namespace)
        _check_int("priority", priority)
        slot_array = as_slot_array(slots)
        if len(slot_array) != self._pages_for(len(array)):
            raise InvalidSlotsError(
                f"{len(slot_array)} slots for {len(array)} tokens; expected "
                f"{self._pages_for(len(array))} (whole pages)")
        self.detached.check(slot_array)
        key = self._key(array)
        length = len(key) // self.tree.unit
        result = self.tree.insert(key, [slot_array[:length]], space, priority=priority, ttl=ttl)
        self.detached.unmark(slot_array)
        self.pools.free_all([np.concatenate((result.freed[FULL], slot_array[length:]))])
        self.counters["inserted_tokens"] += result.new_length
        return length

    def _check_full_only(self, what: str) -> None:
        if len(self.tree.components) > 1:
            raise ConfigError(f"{what}() serves FULL-only caches; use admit/finish leases")

    # ------------------------------------------------------------------ locks, eviction

    def lock(self, node: NodeId) -> Lock:
        """Pin the prefix ending at ``node`` so it cannot be evicted; O(depth).
        Raises :class:`StaleHandleError` if the node is gone."""
        return self.tree.lock(self.tree.node(node))

    def unlock(self, receipt: Lock) -> None:
        """Undo exactly what ``receipt`` pinned. Raises :class:`LockError` when it was
        already released or belongs to another cache."""
        self.tree.unlock(receipt)

    def evict(self, full: int = 0, swa: int = 0, mamba: int = 0) -> dict[str, int]:
        """Evict at least ``full`` FULL tokens, ``swa`` SWA tokens and ``mamba`` states in
        policy order (or all that is evictable), with the cascade FULL → SWA → MAMBA.
        Returns what was freed per component kind."""
        budgets = {"full": full, "swa": swa, "mamba": mamba}
        for name, value in budgets.items():
            _check_int(name, value, minimum=0)
        kinds = [component.kind for component in self.tree.components]
        result = self.tree.evict([budgets[kind] for kind in kinds])
        self.pools.free_all(result.freed)
        return dict(zip(kinds, result.evicted))

    # ------------------------------------------------------------------ inspection

    def stats(self) -> CacheStats:
        """Counters and per-component size ledgers; O(components + leases)."""
        return inspection.stats(self)

    def take_events(self) -> list[KVEvent]:
        """Drain the tree's queued KV events (empty when events are off)."""
        return self.tree.take_events()

    def reset(self) -> None:
        """Drop everything cached; active leases become invalid, every slot is free again.
        Node handles are never reused afterwards."""
        self.tree.reset()
        self.pools.reset()
        self.detached.reset()
        for lease in self._leases.values():
            lease.state = LeaseState.INVALIDATED
            lease.lock = None
        self._leases.clear()

    def check_invariants(self) -> None:
        """Audit tree, pools and leases from scratch; raise :class:`InvariantError` on any
        inconsistency. O(nodes + slots)."""
        inspection.check(self)

    def snapshot(self) -> Any:
        """The whole observable state as plain data (tree, pools, leases, counters)."""
        return inspection.snapshot(self)

    def leases(self) -> list[Lease]:
        """Active leases, oldest first."""
        return list(self._leases.values())

    def namespace_of(self, namespace: Any) -> Namespace:
        """Validate and normalize a namespace (``None`` is the default one)."""
        return validate_namespace(namespace)


def _check_int(
    name: str, value: object, *, minimum: int | None = None, maximum: int | None = None
) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{name} must be an int, got {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise InvalidArgumentError(f"{name}={value} is outside [{minimum}, {maximum}]")
