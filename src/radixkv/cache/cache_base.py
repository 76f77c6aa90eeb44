"""CacheBase: the state of a PrefixCache and what every part of it shares (match, locks,
eviction, inspection). The request life-cycle and the caller-held path are mixins on it."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from ..components.request import RequestSide, TokenSide
from ..core.events import KVEvent
from ..core.keys import (
    DEFAULT_NAMESPACE,
    TOKEN_BYTES,
    Namespace,
    encode_tokens,
    key_of,
    validate_namespace,
)
from ..core.node import Node
from ..core.tiers import DEVICE
from ..core.tree import TreeCore
from ..core.types import Lock, NodeId, TreeMatch
from ..errors import ConfigTypeError, InvalidArgumentError, LockError
from ..host.copy_engine import CopyEngine
from ..host.host_controller import CopyRecord
from ..memory import SlotAllocator
from ..storage.backend import StorageBackend
from ..storage.storage_controller import StorageTierController
from . import inspection
from .allocation import Allocation, AllocationState
from .arguments import as_int
from .cache_config import CacheConfig
from .copy_acks import CopyAcks
from .detached import DetachedSlots
from .lease import Lease, LeaseState
from .lost_hits import count_lost
from .lower_tier import LowerTier
from .pools import ComponentPools
from .results import PRIMARY, CacheStats, MatchResult
from .room import DeviceRoom
from .tier_parts import build_tiers

_VALUES = attrgetter("values")
"""A node's values list (a match result takes each path node's)."""


class _Owner:
    """The token leases and allocations carry to name their cache; copying a handle (even
    deeply) keeps it, so a copy is refused as a copy, not as another cache's."""

    __slots__ = ()

    def __copy__(self) -> _Owner:
        return self

    def __deepcopy__(self, memo: object) -> _Owner:
        return self


class CacheBase:
    """Pools, tree, leases and counters of a cache; see :class:`~radixkv.PrefixCache`."""

    def __init__(self, config: CacheConfig, copy_engine: CopyEngine | None = None,
                 storage: StorageBackend | None = None, *,
                 allocators: Mapping[str, SlotAllocator] | None = None) -> None:
        if not isinstance(config, CacheConfig):
            raise ConfigTypeError(f"expected a CacheConfig, got {type(config).__name__}")
        if copy_engine is not None and not isinstance(copy_engine, CopyEngine):
            raise ConfigTypeError(f"copy_engine must be a CopyEngine, got "
                                  f"{type(copy_engine).__name__}")
        self.config = config
        self.page_size = config.page_size
        self.tree = TreeCore(config.tree_config(), config.make_components())
        if allocators is not None and not isinstance(allocators, Mapping):
            raise ConfigTypeError(f"allocators must map component names to allocators, got "
                                  f"{type(allocators).__name__}")
        self.pools = ComponentPools(config, allocators)
        self.pool = self.pools[PRIMARY]
        self.names = config.names
        self.sides = [component.request_side() for component in self.tree.components]
        """Per component, how requests hold its slots."""
        self._checkpointing = [index for index, side in enumerate(self.sides)
                               if type(side).after_insert is not RequestSide.after_insert]
        """The sides whose ``after_insert`` does something (the others' return 0)."""
        states = [side.index for side in self.sides if not side.per_token]
        # bench sim: where every side needs exactly the new tokens' slots (no state pool),
        # no call per side; chosen once, so other caches pay no test per call
        per_token_only = all(type(side).need is TokenSide.need for side in self.sides)
        self._needs = self._token_needs if per_token_only else self._side_needs
        """Slots each pool must provide for ``tokens`` new token slots and ``states``
        states: ``_needs(tokens, states=0)``; pure."""
        self._state = states[0] if states else None
        """Index of the state component whose state a match returns (MAMBA), if any."""
        self._state_component = self.tree.components[self._state or 0]
        """That component (the primary one when there is none: then never read)."""
        self._owner = _Owner()
        self._lease_ids = itertools.count(1)
        self._leases: dict[int, Lease] = {}
        self._allocation_ids = itertools.count(1)  # 0 is "no allocation"
        self._allocations: dict[int, Allocation] = {}
        self._waiting: dict[int, list[Lease]] = {}
        """Load-back ticket -> the leases waiting for it."""
        self._changed: list[Lease] = []
        """Leases made ready or failed since the last poll/wait."""
        self.counters = dict.fromkeys(inspection.COUNTERS, 0)
        self.lost = [0] * len(self.tree.components)
        """Per component, prompt tokens held structurally that it made unusable."""
        self.explain = config.lost_hits
        self.detached = [DetachedSlots(pool.num_pages, pool.page_size) for pool in self.pools.pools]
        tiers = build_tiers(config, self.tree, self.pools, copy_engine, storage,
                            CopyAcks(self))
        self.lower: tuple[LowerTier, ...] = tiers.lower
        """The tiers below the device, from the device down (:class:`LowerTier`); the
        life-cycle drives them through this tuple alone."""
        self.host = tiers.host
        """The host tier, when configured (for callers that read its pools and copies)."""
        self.storage: StorageTierController | None = tiers.storage
        """The storage tier (L3), when the configuration has one and until :meth:`close`
        ended it (for callers that read its counters or wait for its writes)."""
        self.reclaimer = tiers.reclaimer
        """What evicts from device when the pools are short (:class:`TierParts`)."""
        self.room = DeviceRoom(self.tree, self.pools, self.reclaimer)
        """Checks that requests fit the device pools and makes room by eviction."""
        self._match_extras = self.explain or bool(self.lower)
        """Whether a match has more to do than find the prefix and count it."""
        self.closing_events: list[KVEvent] = []
        """STORAGE events of the puts that landed while ``close()`` settled, until taken."""

    # ------------------------------------------------------------------ keys and match

    def _request(
        self, tokens: Any, namespace: Any, priority: int, ttl: int | None
    ) -> tuple[bytes, Namespace, int, int | None]:
        """Validate what a request brings: packed tokens, its namespace, its priority and
        ttl as Python ints; pure."""
        packed = encode_tokens(tokens)
        space = validate_namespace(namespace)
        if type(priority) is not int:  # bench insert/admit: a plain int takes one test
            priority = as_int("priority", priority)
        if ttl is not None:
            ttl = as_int("ttl", ttl, 0)
        return packed, space, priority, ttl

    def _key(self, packed: bytes, length: int | None = None) -> bytes:
        """Tree key of the first ``length`` packed tokens (all by default), whole pages."""
        if length is not None:
            packed = packed[: TOKEN_BYTES * length]
        return key_of(packed, self.config.bigram, self.tree.page_bytes)

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
        if self.lower:
            self._with_lower(result, key, space, found)

    def _with_lower(self, result: MatchResult, key: bytes, space: Namespace,
                    found: TreeMatch) -> None:
        """Fill in what the lower tiers add to a match: ``host_length``, the load-backs
        still writing to the prefix; and note the hit nodes for their write policies."""
        result.host_length = self._lower_length(key, space, found)
        copying = self.tree.copying
        if copying:
            result.loading = tuple(sorted({
                record.ticket for node in found.path for record in copying.get(node.id, ())
                if record.tier == DEVICE}))

    def _lower_length(self, key: bytes, space: Namespace, found: TreeMatch) -> int:
        """Tokens beyond the device match that lower tiers' values make usable; notes the
        hit nodes for the write policies. O(depth x tiers)."""
        for tier in self.lower:
            tier.prepare_store(found.path)
        if found.length >= found.branch:
            return 0
        return self.tree.copies.match_all_tiers(key, space).length - found.length

    def _copy_reported(self, record: CopyRecord, ok: bool) -> None:
        """See :meth:`LoadBack._copy_reported`."""

    def _after_insert(self, node: Node | None) -> None:
        """Let the lower tiers' write policies see the nodes an insert stored or ran
        through (the first use of a new node), and start the copies that are due."""
        if node is None:
            return
        path = []
        while node.parent is not None:
            path.append(node)
            node = node.parent
        self._stored(path)

    def _stored(self, path: list[Node]) -> None:
        """Tell every lower tier of ``path``'s uses, then let each start its due copies."""
        for tier in self.lower:
            tier.prepare_store(path)
        for tier in self.lower:
            tier.complete_store()

    def _count_match(self, queried: int, found: TreeMatch, key: bytes, space: Namespace,
                     full_key: bytes | None = None) -> None:
        """Count a match of ``queried`` tokens, why it fell short of the structure, and
        (given the uncapped ``full_key`` when ``max_match`` cut ``key``) what the cap hid."""
        counters = self.counters
        counters["matches"] += 1
        counters["match_tokens"] += queried
        counters["hit_tokens"] += found.length
        if not self.explain:
            return
        if found.length < found.branch:
            count_lost(self.lost, self.tree, found, key, space)
        if full_key is not None and found.branch * self.tree.unit == len(key) < len(full_key):
            uncapped = self.tree.match(full_key, space, touch=False)  # pure; O(depth)
            counters["capped_tokens"] += uncapped.branch - found.branch

    def _side_needs(self, tokens: int, states: int = 0) -> list[int]:
        """:attr:`_needs`, asking each side."""
        return [side.need(tokens, states) for side in self.sides]

    def _token_needs(self, tokens: int, states: int = 0) -> list[int]:
        """:attr:`_needs` where every side needs ``tokens`` slots."""
        return [tokens] * len(self.sides)

    def pages_for(self, num_tokens: int) -> int:
        """Slots (whole pages) needed for ``num_tokens`` tokens."""
        page = self.page_size
        return -(-num_tokens // page) * page

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

