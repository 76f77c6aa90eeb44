"""The reference engine's host memory: one host buffer per device buffer, registered with
the cache's copy engine, so that backups and load-backs move the model's real KV and
states between the tiers (and a storage tier reads and writes L3 pages there)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..cache import CacheConfig, PrefixCache
from ..errors import ConfigError
from ..host import CopyEngine, NumpyCopyEngine
from .memory import STATE_BUFFER, Memory


def attach_host(cache: PrefixCache, memory: Memory, state: str | None) -> dict[str, np.ndarray]:
    """Register ``memory``'s device buffers, and host buffers of the same row shape (one
    row per host slot of the component), with the copy engine of ``cache``'s host tier;
    return the host buffers by component name (empty without a host tier). Buffers
    :func:`register_buffers` registered for ``memory`` before the cache was built are kept
    (a storage tier already holds them). ``memory``'s KV buffers are named after the cache
    components they hold; ``state`` is the name of the state component (its buffer is
    :data:`STATE_BUFFER`). Raises :class:`ConfigError` when the host tier's copy engine is
    not a :class:`NumpyCopyEngine` (the reference engine's buffers are numpy arrays)."""
    host = cache.host
    if host is None:
        return {}
    return register_buffers(host.engine, cache.config, memory, state)


def register_buffers(engine: CopyEngine, config: CacheConfig, memory: Memory,
                     state: str | None) -> dict[str, np.ndarray]:
    """What :func:`attach_host` does, from the configuration alone: so that the buffers
    exist before a cache with a storage tier is built on ``engine``. Idempotent for one
    ``memory``: a component whose device buffer is already ``memory``'s keeps its host
    buffer. Raises :class:`ConfigError` as :func:`attach_host` does, and when ``config``
    has no host tier."""
    if not isinstance(engine, NumpyCopyEngine):
        raise ConfigError("the reference engine needs a NumpyCopyEngine for its host tier, "
                          f"got {type(engine).__name__}")
    tier = config.host
    if tier is None:
        raise ConfigError("host buffers need a host tier (CacheConfig.host)")
    capacities = {name: tier.capacity_of(name, per_token)
                  for name, _, per_token in config.host_shapes()}
    buffers: dict[str, np.ndarray] = {}
    for name, device in _by_component(memory.buffers, state).items():
        kept = engine.host_buffer(name)
        if engine.buffer(name, "device") is device and kept is not None:
            buffers[name] = kept
            continue
        buffers[name] = np.zeros((capacities[name], *device.shape[1:]), dtype=device.dtype)
        engine.register(name, "device", device)
        engine.register(name, "host", buffers[name])
    return buffers


def _by_component(buffers: Mapping[str, np.ndarray], state: str | None
                  ) -> dict[str, np.ndarray]:
    named = {name: array for name, array in buffers.items() if name != STATE_BUFFER}
    if STATE_BUFFER in buffers and state is not None:
        named[state] = buffers[STATE_BUFFER]
    return named
