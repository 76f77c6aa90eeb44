"""CacheState: the data of a PrefixCache, and the bookkeeping its parts share (keys, needs,
match counting, the end of a lease). The verbs are the parts' (see
:class:`~radixkv.PrefixCache`)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from ..components.request import RequestSide, TokenSide
from ..core.events import KVEvent
from ..core.keys import TOKEN_BYTES, Namespace, key_of
from ..core.tree import TreeCore
from ..core.types import TreeMatch
from ..errors import ConfigTypeError, LeaseError
from ..host.copy_engine import CopyEngine
from ..memory import SlotAllocator
from ..storage.backend import StorageBackend
from ..storage.storage_controller import StorageTierController
from . import inspection
from .allocation import Allocation
from .cache_config import CacheConfig
from .copy_acks import CopyAcks
from .detached import DetachedSlots
from .lease import Lease, LeaseState
from .lost_hits import count_lost
from .lower_tier import LowerTier
from .pools import ComponentPools
from .results import PRIMARY
from .room import DeviceRoom
from .tier_parts import build_tiers


class _Owner:
    """The token leases and allocations carry to name their cache; copying a handle (even
    deeply) keeps it, so a copy is refused as a copy, not as another cache's."""

    __slots__ = ()

    def __copy__(self) -> _Owner:
        return self

    def __deepcopy__(self, memo: object) -> _Owner:
        return self


class CacheState:
    """Pools, tree, leases, allocations, counters and the tiers below the device of a
    cache: every attribute has this one owner. The parts (:mod:`.lifecycle`,
    :mod:`.load_back`, :mod:`.direct`, :mod:`.tier_driver`, :mod:`.copy_acks`) are built on
    it and keep references to the containers they read, which :meth:`PrefixCache.reset`
    clears in place and nothing rebinds; ``lower`` and ``storage`` (rebound by ``close``)
    are read here at each use. See :class:`~radixkv.PrefixCache`."""

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
        self._token_sides_only = all(type(side) is TokenSide for side in self.sides)
        """Whether every request side is a plain :class:`TokenSide` (whose release hands
        back nothing of a lease the tree holds whole)."""
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
                            CopyAcks(self._waiting, self._changed, self._end_lease))
        self.lower: tuple[LowerTier, ...] = tiers.lower
        """The tiers below the device, from the device down (:class:`LowerTier`); the
        tier driver drives them through this tuple alone, read here at each use."""
        self.host = tiers.host
        """The host tier, when configured (for callers that read its pools and copies)."""
        self.storage: StorageTierController | None = tiers.storage
        """The storage tier (L3), when the configuration has one and until :meth:`close`
        ended it (for callers that read its counters or wait for its writes)."""
        self.reclaimer = tiers.reclaimer
        """What evicts from device when the pools are short (:class:`TierParts`)."""
        self.room = DeviceRoom(self.tree, self.pools, self.reclaimer)
        """Checks that requests fit the device pools and makes room by eviction."""
        self.tiered = bool(self.lower)
        """Whether the cache has tiers below the device: fixed at construction (``close``
        drops a storage tier only, and one exists only below a host tier, which stays). The
        hot paths test this, not ``lower``, which their parts would read through the state
        (one instruction more an admit, finish and insert: bench opcodes)."""
        self._match_extras = self.explain or self.tiered
        """Whether a match has more to do than find the prefix and count it."""
        self.closing_events: list[KVEvent] = []
        """STORAGE events of the puts that landed while ``close()`` settled, until taken."""

    # ------------------------------------------------------------------ shared bookkeeping

    def _key(self, packed: bytes, length: int | None = None) -> bytes:
        """Tree key of the first ``length`` packed tokens (all by default), whole pages."""
        if length is not None:
            packed = packed[: TOKEN_BYTES * length]
        return key_of(packed, self.config.bigram, self.tree.page_bytes)

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

    # ------------------------------------------------------------------ the end of a lease

    def _check_active(self, lease: Lease) -> None:
        """Raise :class:`LeaseError` unless ``lease`` is the very object this cache issued
        and it is active (a copy shares the original's lock and buffers)."""
        # bench release: one dict get proves owner, liveness and identity at once
        if type(lease) is not Lease or self._leases.get(lease.id) is not lease:
            self._refuse_lease(lease)

    def _refuse_lease(self, lease: object) -> None:
        if not isinstance(lease, Lease):
            raise LeaseError(f"expected a Lease, got {type(lease).__name__}")
        if lease.owner is not self._owner:
            raise LeaseError(f"lease {lease.id} was issued by another cache")
        if lease.state is not LeaseState.ACTIVE:
            raise LeaseError(f"lease {lease.id} is {lease.state.value}, not active")
        raise LeaseError(f"lease {lease.id} is not the lease this cache issued (a copy?)")

    def _end_lease(self, lease: Lease, cached: int, state: LeaseState, counter: str) -> None:
        """End an active lease: free what it holds beyond its first ``cached`` tokens,
        unlock what it borrowed, leave it in ``state`` and count it under ``counter``.
        Shared by finish, abort and a failed load-back (:class:`~.copy_acks.CopyAcks`)."""
        allocated = lease.num_allocated  # bench release (short): no view, 0.78 -> 0.06 us
        # bench admit_finish (short, p1): a lease the tree holds whole, of plain token
        # sides, hands back nothing (5.3 -> 0.3 us); release, unlock and close are one call
        # (admit_finish: two Python calls fewer a finish)
        if allocated > cached or not self._token_sides_only:
            self.pools.free_all([side.release(buffer, cached, allocated)
                                 for side, buffer in zip(self.sides, lease.buffers)])
        lock = lease.lock
        if lock is not None:
            self.tree.unlock(lock)
            lease.lock = None
        lease.state = state
        del self._leases[lease.id]
        self.counters[counter] += 1
