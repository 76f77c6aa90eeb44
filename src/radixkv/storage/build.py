"""Building a cache's storage tier: config, store and the copy engine's host buffers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core.tree import TreeCore
from ..errors import ConfigError, ConfigTypeError, CopyEngineError
from ..tiers.host import HostTierController
from .backend import StorageBackend
from .config import StorageTier
from .tier import StorageTierController

if TYPE_CHECKING:
    from ..cache.config import CacheConfig


def storage_tier(config: CacheConfig, tree: TreeCore, host: HostTierController | None,
                  backend: StorageBackend | None) -> StorageTierController:
    """The L3 controller, once config, store and the engine's host buffers agree (nothing
    is built, no thread started, when they do not)."""
    if config.storage is None or backend is None:
        raise ConfigError("a storage tier needs both CacheConfig.storage and a storage "
                          "backend (PrefixCache(config, copy_engine, storage=backend))")
    if not isinstance(backend, StorageBackend):
        raise ConfigTypeError(f"storage must be a StorageBackend, got {type(backend).__name__}")
    batch = backend.max_batch
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"the store's max_batch must be an int >= 1, got {batch!r}")
    assert host is not None  # CacheConfig checked it
    buffers = host_buffers(config.storage, config.names, host)
    return StorageTierController(config.storage, tree, host, backend, buffers)


def host_buffers(tier: StorageTier, names: tuple[str, ...] | list[str],
                 host: HostTierController) -> list[np.ndarray]:
    """Per component, the copy engine's host buffer, checked against its layout and the
    host tier's slots (:meth:`StorageLayout.check_buffer`). The engine's code is
    untrusted: whatever its ``host_buffer`` raises becomes :class:`CopyEngineError`."""
    buffers = []
    for name, pool in zip(names, host.pools):
        try:
            buffer = host.engine.host_buffer(name)
        except Exception as error:  # the engine's code: anything it raises is its fault
            raise CopyEngineError(f"the copy engine's host_buffer({name!r}) raised "
                                  f"{type(error).__name__}: {error}") from error
        if buffer is None:
            raise ConfigError(f"the copy engine exposes no host buffer for {name!r}: L3 pages "
                              "are read and written there (NumpyCopyEngine.register)")
        layout = tier.layout_of(name)
        assert layout is not None  # CacheConfig checked the layouts against the components
        layout.check_buffer(buffer, pool.capacity)
        buffers.append(buffer)
    return buffers
