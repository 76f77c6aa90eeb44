"""Building the tiers below a cache's device pools, each handed at construction what it
tells: the storage tier's writes first (the host tier's sink), then the host tier (told the
cache, its listener), then the storage tier below it; the cache drives them as one list of
:class:`~.lower_tier.LowerTier` s."""

from __future__ import annotations

from typing import NamedTuple

from ..core.tree import TreeCore
from ..host.copy_engine import CopyEngine
from ..host.host_controller import HostTierController
from ..host.numpy_engine import NumpyCopyEngine
from ..host.parts import CopyListener
from ..storage.backend import StorageBackend
from ..storage.build import check_storage, storage_parts, storage_tier
from ..storage.storage_controller import StorageTierController
from .cache_config import CacheConfig
from .lower_tier import LowerTier
from .pools import ComponentPools
from .room import Reclaimer, TreeReclaimer


class TierParts(NamedTuple):
    """A cache's tiers below the device, and what reclaims device room."""

    lower: tuple[LowerTier, ...]
    """Every tier below the device, from the device down (host first, then storage)."""
    host: HostTierController | None
    storage: StorageTierController | None
    reclaimer: Reclaimer
    """The host tier when there is one (it backs values up first under write-back), else
    the tree's eviction."""


def build_tiers(config: CacheConfig, tree: TreeCore, pools: ComponentPools,
                copy_engine: CopyEngine | None, backend: StorageBackend | None,
                listener: CopyListener) -> TierParts:
    """The tiers ``config`` asks for (the copy engine defaults to a
    :class:`NumpyCopyEngine`). Raises :class:`ConfigError` (nothing built, no thread
    started) when a store comes without ``CacheConfig.storage`` or the other way round, or
    when the store or the engine's host buffers do not fit."""
    wanted = config.storage is not None or backend is not None
    if config.host is None:
        if wanted:  # CacheConfig allows no storage tier without a host tier: this raises
            check_storage(config, backend)
        return TierParts((), None, None, TreeReclaimer(tree, pools))
    engine = NumpyCopyEngine() if copy_engine is None else copy_engine
    parts = storage_parts(config, tree, engine, backend) if wanted else None
    host = HostTierController(config.host, config.host_shapes(), tree, pools, engine,
                              listener=listener, sink=None if parts is None else parts.sink)
    if parts is None:
        return TierParts((host,), host, None, host)
    storage = storage_tier(tree, host, parts)
    return TierParts((host, storage), host, storage, host)
