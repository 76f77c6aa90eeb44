"""The reference engine's host memory: one host buffer per device buffer, registered with
the cache's copy engine, so that backups and load-backs move the model's real KV and
states between the tiers."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..cache import PrefixCache
from ..errors import ConfigError
from ..tiers import NumpyCopyEngine
from .memory import STATE_BUFFER, Memory


def attach_host(cache: PrefixCache, memory: Memory, state: str | None) -> dict[str, np.ndarray]:
    """Register ``memory``'s device buffers, and host buffers of the same row shape (one
    row per host slot of the component), with the copy engine of ``cache``'s host tier;
    return the host buffers by component name (empty without a host tier). ``memory``'s
    KV buffers are named after the cache components they hold; ``state`` is the name of
    the state component (its buffer is :data:`STATE_BUFFER`). Raises :class:`ConfigError`
    when the host tier's copy engine is not a :class:`NumpyCopyEngine` (the reference
    engine's buffers are numpy arrays)."""
    host = cache.host
    if host is None:
        return {}
    engine = host.engine
    if not isinstance(engine, NumpyCopyEngine):
        raise ConfigError("the reference engine needs a NumpyCopyEngine for its host tier, "
                          f"got {type(engine).__name__}")
    capacities = {name: pool.capacity for name, pool in zip(cache.config.names, host.pools)}
    buffers: dict[str, np.ndarray] = {}
    for name, device in _by_component(memory.buffers, state).items():
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
