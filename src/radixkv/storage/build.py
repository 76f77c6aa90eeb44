"""Building a cache's storage tier: config, store and the copy engine's host buffers.

Its write half is built first, before the host tier, because the host tier is built with
it as its sink (it hears of backups and drops); the tier itself, which reads into host
slots, is built after the host tier, from those parts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core.event_log import EventQueue
from ..core.tree import TreeCore
from ..errors import ConfigError, ConfigTypeError, CopyEngineError
from ..host.copy_engine import CopyEngine
from ..host.host_config import HostTier, WritePolicy
from ..host.host_controller import HostTierController
from .backend import StorageBackend
from .storage_config import StorageTier
from .storage_controller import StorageParts, StorageTierController
from .worker import StorageWorker
from .write_back import WriteBack
from .write_through import WriteThrough
from .writes import StorageWrites

if TYPE_CHECKING:
    from ..cache.cache_config import CacheConfig


def check_storage(config: CacheConfig, backend: StorageBackend | None) -> StorageTier:
    """The storage tier's config, once config and store are both given (nothing is built
    otherwise). Raises :class:`ConfigError` / :class:`ConfigTypeError`."""
    if config.storage is None or backend is None:
        raise ConfigError("a storage tier needs both CacheConfig.storage and a storage "
                          "backend (PrefixCache(config, copy_engine, storage=backend))")
    if not isinstance(backend, StorageBackend):
        raise ConfigTypeError(f"storage must be a StorageBackend, got {type(backend).__name__}")
    batch = backend.max_batch
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"the store's max_batch must be an int >= 1, got {batch!r}")
    return config.storage


def storage_parts(config: CacheConfig, tree: TreeCore, engine: CopyEngine,
                  backend: StorageBackend | None) -> StorageParts:
    """The write half of the storage tier, once config, store and the engine's host buffers
    agree (nothing is built, no thread started, when they do not; the worker starts its
    thread at its first job)."""
    tier = check_storage(config, backend)
    assert config.host is not None and backend is not None  # CacheConfig checked the host
    buffers = host_buffers(tier, config.host, config.host_shapes(), engine)
    worker = StorageWorker(backend, thread=tier.io_thread)
    layouts = []
    for component in tree.components:
        layout = tier.layout_of(component.name)
        assert layout is not None  # CacheConfig checked the layouts against the components
        layouts.append(layout)
    writes = StorageWrites(worker, tree.components, layouts, buffers, tree.log.hasher,
                           tree.page_bytes, tree.config.bigram,
                           EventQueue(tree.log.limit, tree.log.enabled))
    by_drops = tier.write and config.host.policy is WritePolicy.WRITE_BACK
    write_back = WriteBack(tree, writes) if by_drops else None
    sink = write_back if by_drops or not tier.write else WriteThrough(tree, writes)
    return StorageParts(tier, worker, writes, buffers, write_back, sink)


def storage_tier(tree: TreeCore, host: HostTierController,
                 parts: StorageParts) -> StorageTierController:
    """The L3 controller, from its parts, below ``host`` (built with ``parts.sink``)."""
    return StorageTierController(tree, host, parts)


def host_buffers(tier: StorageTier, host: HostTier,
                 shapes: list[tuple[str, int, bool]], engine: CopyEngine) -> list[np.ndarray]:
    """Per component, the copy engine's host buffer, checked against its layout and the
    host tier's slots (:meth:`StorageLayout.check_buffer`). The engine's code is
    untrusted: whatever its ``host_buffer`` raises becomes :class:`CopyEngineError`."""
    buffers = []
    for name, _page, per_token in shapes:
        try:
            buffer = engine.host_buffer(name)
        except Exception as error:  # the engine's code: anything it raises is its fault
            raise CopyEngineError(f"the copy engine's host_buffer({name!r}) raised "
                                  f"{type(error).__name__}: {error}") from error
        if buffer is None:
            raise ConfigError(f"the copy engine exposes no host buffer for {name!r}: L3 pages "
                              "are read and written there (NumpyCopyEngine.register)")
        layout = tier.layout_of(name)
        assert layout is not None  # CacheConfig checked the layouts against the components
        layout.check_buffer(buffer, host.capacity_of(name, per_token))
        buffers.append(buffer)
    return buffers
