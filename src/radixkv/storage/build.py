"""Building a cache's storage tier: config, store and the copy engine's host buffers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.tree import TreeCore
from ..errors import ConfigError, ConfigTypeError
from ..tiers.host import HostTierController
from .backend import StorageBackend
from .tier import StorageTierController

if TYPE_CHECKING:
    from ..cache.config import CacheConfig


def storage_tier(config: CacheConfig, tree: TreeCore, host: HostTierController | None,
                  backend: StorageBackend | None) -> StorageTierController:
    """The L3 controller, once config, store and the engine's host buffers agree."""
    if config.storage is None or backend is None:
        raise ConfigError("a storage tier needs both CacheConfig.storage and a storage "
                          "backend (PrefixCache(config, copy_engine, storage=backend))")
    if not isinstance(backend, StorageBackend):
        raise ConfigTypeError(f"storage must be a StorageBackend, got {type(backend).__name__}")
    assert host is not None  # CacheConfig checked it
    buffers = []
    for name in config.names:
        buffer = host.engine.host_buffer(name)
        if buffer is None:
            raise ConfigError(f"the copy engine exposes no host buffer for {name!r}: L3 pages "
                              "are read and written there (NumpyCopyEngine.register)")
        buffers.append(buffer)
    return StorageTierController(config.storage, tree, host, backend, buffers)
