"""PrefixCache: the controller that owns the pools and drives the tree for a scheduler."""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from ..core.bound_verbs import refuse_hiding
from ..core.events import KVEvent
from ..core.keys import DEFAULT_NAMESPACE, TOKEN_BYTES, Namespace, encode_tokens, validate_namespace
from ..core.node import Node
from ..core.types import Lock, NodeId, TreeMatch
from ..errors import InvalidArgumentError, LockError
from ..host.copy_engine import CopyEngine
from ..memory import SlotAllocator
from ..storage.backend import StorageBackend
from . import inspection
from .allocation import AllocationState
from .arguments import as_int
from .cache_config import CacheConfig
from .cache_state import CacheState
from .direct import Direct
from .lease import Lease, LeaseState
from .lifecycle import Lifecycle
from .load_back import LoadBack
from .lost_hits import count_lost
from .part_verb import PartVerb
from .results import PRIMARY, CacheStats, MatchResult
from .tier_driver import TierDriver

_VALUES = attrgetter("values")
"""A node's values list (a match result takes each path node's)."""


class PrefixCache(CacheState):
    """Prefix cache of one serving engine: a radix tree over token ids plus its slot pools.

    Two ways in. Request life-cycle (leases): :meth:`admit` (match, lock, allocate) →
    :meth:`extend` (decode tokens) / :meth:`commit` (chunked prefill) / :meth:`checkpoint`
    (save a MAMBA state) / :meth:`slide_window` (release SWA slots that left the window) →
    :meth:`finish` or :meth:`abort`. Caller-held slots: :meth:`allocate` → :meth:`insert`
    or :meth:`release`. Plus :meth:`match`, :meth:`lock`/:meth:`unlock`, :meth:`evict`,
    :meth:`stats`, :meth:`take_events`, :meth:`reset`, :meth:`check_invariants`. With a
    host tier (``CacheConfig(host=...)`` and a copy engine): :meth:`poll` / :meth:`wait`
    apply the engine's acknowledgements, and ``admit(..., load_back=True)`` revives
    host-only prefixes.
    Every method validates before it mutates: when it raises, the cache is as it was.

    Where each verb lives: the cache's data is its :class:`~.cache_state.CacheState`;
    match, lock, unlock, evict, reset and the inspection verbs (stats, sizes, snapshot,
    check_invariants, leases, take_events, namespace_of) are its own; the others are its
    parts' methods, bound under its names at construction (:data:`BOUND_VERBS`; their
    contracts are stated there): :attr:`lifecycle` (:class:`~.lifecycle.Lifecycle`: admit,
    extend, commit, checkpoint, slide_window, finish, abort, with its :attr:`load_back`,
    :class:`~.load_back.LoadBack`), :attr:`direct` (:class:`~.direct.Direct`: allocate,
    insert, release, adopt) and :attr:`tier_driver` (:class:`~.tier_driver.TierDriver`:
    poll, wait, prefetch, take_storage_events, close).

    Threads: a PrefixCache is single-threaded. One thread (the scheduler's) makes every
    call, or the caller serialises them; nothing inside takes a lock. The one exception is
    :meth:`stats`: on a GIL build of CPython another thread (a metrics exporter) may call
    it at any time; it never raises for a concurrent mutation and never changes anything,
    but its fields are read one after another, not as one atomic snapshot (``available``
    and ``cached`` may come from either side of an admit). :meth:`snapshot`,
    :meth:`check_invariants`, :meth:`leases` and :meth:`take_events` walk or drain shared
    structures and are owner-thread only (a concurrent :meth:`snapshot` can raise
    ``RuntimeError``).
    """

    admit = PartVerb("lifecycle", Lifecycle.admit)
    extend = PartVerb("lifecycle", Lifecycle.extend)
    commit = PartVerb("lifecycle", Lifecycle.commit)
    checkpoint = PartVerb("lifecycle", Lifecycle.checkpoint)
    slide_window = PartVerb("lifecycle", Lifecycle.slide_window)
    finish = PartVerb("lifecycle", Lifecycle.finish)
    abort = PartVerb("lifecycle", Lifecycle.abort)
    allocate = PartVerb("direct", Direct.allocate)
    insert = PartVerb("direct", Direct.insert)
    release = PartVerb("direct", Direct.release)
    adopt = PartVerb("direct", Direct.adopt)
    poll = PartVerb("tier_driver", TierDriver.poll)
    wait = PartVerb("tier_driver", TierDriver.wait)
    prefetch = PartVerb("tier_driver", TierDriver.prefetch)
    take_storage_events = PartVerb("tier_driver", TierDriver.take_storage_events)
    close = PartVerb("tier_driver", TierDriver.close)

    BOUND_VERBS = ("admit", "extend", "commit", "checkpoint", "slide_window", "finish",
                   "abort", "allocate", "insert", "release", "adopt", "poll", "wait",
                   "prefetch", "take_storage_events", "close")
    """The parts' methods a cache binds under its own names at construction."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Refuse a subclass that defines a bound verb (see :func:`refuse_hiding`)."""
        super().__init_subclass__(**kwargs)
        refuse_hiding(cls, PrefixCache.BOUND_VERBS, "cache")

    def __init__(self, config: CacheConfig, copy_engine: CopyEngine | None = None,
                 storage: StorageBackend | None = None, *,
                 allocators: Mapping[str, SlotAllocator] | None = None) -> None:
        super().__init__(config, copy_engine, storage, allocators=allocators)
        self.tier_driver = TierDriver(self)
        """What the tiers below the device are told, and poll, wait, prefetch, close."""
        self.load_back = LoadBack(self)
        """The load-back half of admit (the life-cycle's)."""
        self.lifecycle = Lifecycle(self, self.load_back, self.tier_driver)
        """The request life-cycle: admit to finish or abort."""
        self.direct = Direct(self, self.tier_driver)
        """The caller-held path: allocate, insert, release, adopt."""
        # the verbs bound once: a forwarding method would add a Python call to every admit,
        # finish, allocate and insert (bench opcodes: about 10 instructions each); the
        # instance's binding hides the class's PartVerb, which documents the verb
        instance = vars(self)
        for name in PrefixCache.BOUND_VERBS:
            instance[name] = getattr(self, name)  # still the PartVerb's: the part's method

    # ------------------------------------------------------------------ match

    def match(self, tokens: Any, namespace: Any = None) -> MatchResult:
        """Longest cached prefix of ``tokens`` usable by every component.

        Never changes the tree's structure; refreshes recency along the prefix and counts a
        hit. Cost O(depth); the prefix slots are concatenated when the result's ``slots``
        is first read. Raises :class:`InvalidTokensError` / :class:`InvalidNamespaceError`
        on bad input.
        """
        packed = encode_tokens(tokens)
        space = DEFAULT_NAMESPACE if namespace is None else validate_namespace(namespace)
        # bench match_prefix: without bigrams the tree walks the packed tokens as they are
        key = self._key(packed) if self.config.bigram else packed
        length, path, branch = self.tree.match_parts(key, space)
        num_tokens = len(packed) // TOKEN_BYTES
        counters = self.counters  # bench match_prefix: _count_match inline
        counters["matches"] += 1
        counters["match_tokens"] += num_tokens
        counters["hit_tokens"] += length
        node = path[-1] if path else None
        # bench match_prefix: a handle is the node's int id (no NodeId call)
        handle: NodeId | None = None if node is None else node.id  # type: ignore[assignment]
        # bench match_prefix: the values lists are taken, not read (they are cold in the CPU
        # cache); their FULL entries on a usable path are never None. map + attrgetter: one
        # C loop (match 613 -> 576 instructions a call, full page 1, bench opcodes)
        path_values = list(map(_VALUES, path))
        index = self._state
        if index is None:
            result = MatchResult(length, path_values, handle)
        else:
            # bench match_prefix (full+mamba): a component's device value sits at its own
            # index of the values list (core.tiers.Tier.slot), as the FULL slots above do
            result = MatchResult(length, path_values, handle,
                                 None if node is None else node.values[index],
                                 (branch, num_tokens, self._state_component))
        if self._match_extras:  # bench match_prefix: one test for the ledger and the host
            self._after_match(result, key, space, TreeMatch(length, node, path, branch))
        return result

    def _after_match(self, result: MatchResult, key: bytes, space: Namespace,
                     found: TreeMatch) -> None:
        """Count why a cut prefix was cut (lost-hit ledger), and add the lower tiers' part."""
        if found.length < found.branch and self.explain:
            count_lost(self.lost, self.tree, found, key, space)
        if self.tiered:
            self.tier_driver.matched(result, key, space, found)

    # ------------------------------------------------------------------ locks, eviction

    def lock(self, prefix: MatchResult | NodeId, length: int | None = None) -> Lock:
        """Pin a cached prefix so it cannot be evicted: exactly that prefix — its FULL
        slots, the window and state every component needs at its end — and nothing more
        (a prefix ending inside a node splits it). ``prefix`` is a :class:`MatchResult`
        (its ``length`` tokens), or a node handle with ``length`` (default: the whole path
        to the node's end). O(depth). Raises :class:`StaleHandleError` if the node is gone,
        is another cache's or is a root; :class:`InvalidArgumentError` for an empty match or
        a length that does not end inside the node on a page boundary."""
        tree = self.tree
        if type(prefix) is int and length is None:  # bench lock_unlock: a handle, whole path
            found = tree.nodes.get(prefix)
            if found is not None and found.parent is not None:
                return tree.lock(found)
        if type(prefix) is MatchResult:
            if length is not None:
                raise InvalidArgumentError("lock(match) takes the match's own length")
            if prefix.node is None:
                raise InvalidArgumentError("an empty match pins nothing")
            node, length = tree.node(prefix.node), prefix.length
            while node.start >= length and node.parent is not None \
                    and node.parent.parent is not None:  # a later split cut above the end
                node = node.parent
        else:
            node = tree.node(prefix)  # type: ignore[arg-type]
        if length is None:
            return tree.lock(node)
        return tree.lock(node, self._lock_end(node, length))

    def _lock_end(self, node: Node, length: object) -> int:
        """``length`` as a key position ending inside ``node`` on a page boundary."""
        end = as_int("length", length, 0)
        if not node.start < end <= node.start + node.length or end % self.page_size:
            raise InvalidArgumentError(
                f"length {end} does not end inside node {node.id} "
                f"([{node.start}, {node.start + node.length})) on a page boundary")
        return end

    def unlock(self, receipt: Lock) -> None:
        """Undo exactly what ``receipt`` pinned. Raises :class:`LockError` when it was
        already released, belongs to another cache, or is the lock of an active lease (only
        finish/abort/commit may release that)."""
        if type(receipt) is Lock and receipt.lease is not None:
            self.tree.locker.check_receipt(receipt)
            raise LockError(f"lock {receipt.id} belongs to lease {receipt.lease}; "
                            "finish or abort the lease instead")
        self.tree.unlock(receipt)

    def evict(self, *primary: int, **budgets: int) -> dict[str, int]:
        """Evict, per component name, at least that many units (tokens for per-token
        components, states for MAMBA) in policy order, or all that is evictable, e.g.
        ``evict(full=64, mamba=2)``; a positional budget is the primary (FULL) component's.
        Evicting a value evicts what depends on it on the same node (FULL → SWA → MAMBA).
        Returns what was evicted per component name. Raises :class:`InvalidArgumentError`
        (nothing changed) for a budget that is not an int >= 0, or a non-zero one for a
        component this cache lacks."""
        if primary:
            if len(primary) > 1 or self.names[PRIMARY] in budgets:
                raise InvalidArgumentError(f"one budget for {self.names[PRIMARY]!r}, got "
                                           f"{(*primary, *budgets.values())}")
            budgets[self.names[PRIMARY]] = primary[0]
        budgets = {name: as_int(name, value, 0) for name, value in budgets.items()}
        for name, budget in budgets.items():
            if budget and name not in self.names:
                raise InvalidArgumentError(
                    f"{name}={budget}: this cache has no {name} component (it has "
                    f"{', '.join(self.names)})")
        evicted = self.reclaimer.evict_device([budgets.get(name, 0) for name in self.names])
        return dict(zip(self.names, evicted))

    # ------------------------------------------------------------------ inspection

    def stats(self) -> CacheStats:
        """Counters and per-component size ledgers; O(components + leases)."""
        return inspection.stats(self)

    def sizes(self, component: int = PRIMARY) -> tuple[int, int]:
        """``(cached, protected)`` units of one component (by index in the cache's order;
        the primary, FULL, by default): what :meth:`stats` reports as ``cached`` and
        ``protected``, without building it. Pure, O(1); an engine's scheduler asks every
        step (SGLang's ``evictable_size`` / ``protected_size``)."""
        tree = self.tree
        return tree.cached[component], tree.protected[component]

    def take_events(self) -> list[KVEvent]:
        """Drain the tree's queued KV events (empty when events are off)."""
        return self.tree.take_events()

    def reset(self) -> None:
        """Drop everything cached; active leases and held allocations become invalid, every
        slot is free again.
        Node handles are never reused afterwards. With a host tier, first waits for every
        copy in flight (their slots are about to be reused), with a storage tier for its
        I/O too (:class:`StorageTimeoutError` past ``StorageTier.wait_timeout_s``, and
        nothing is dropped)."""
        # every tier settles before any forgets: a timeout raises with nothing dropped, and
        # the host's backups land (handing L3 their writes) before L3 settles its writes
        for tier in self.lower:
            tier.settle()
        for tier in self.lower:
            tier.reset()
        self._waiting.clear()
        self._changed.clear()
        self.tree.reset()
        self.pools.reset()
        for detached in self.detached:
            detached.reset()
        for lease in self._leases.values():
            lease.state = LeaseState.INVALIDATED
            lease.lock = None
        self._leases.clear()
        for allocation in self._allocations.values():
            allocation.status = AllocationState.INVALIDATED
        self._allocations.clear()

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

