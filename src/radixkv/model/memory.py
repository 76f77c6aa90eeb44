"""Device memory of the reference model: paged KV buffers and recurrent-state buffers.

Each layer kind indexes its pools with the slot ids of the cache component that holds its
KV (FULL, SWA, chunked local) or state (MAMBA) — exactly the ids a
:class:`~radixkv.PrefixCache` hands out, so each pool is as large as the slot pool of that
component. The layers that read one component share one buffer, first axis = slot
(``(slots, layers, 2, heads, head_dim)`` for KV, ``(states, layers, state_size)`` for
states): one row is everything a slot holds, so a copy engine moves a slot between device
and host memory by copying rows of that one array (:attr:`Memory.buffers`).
:func:`engine_memory` sizes them for a cache configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..cache import CacheConfig
from ..errors import ConfigError
from .model_config import ATTENTION_KINDS, LAYER_COMPONENTS, ModelConfig

STATE_BUFFER = "ssm"
"""The name of the state buffer in :attr:`Memory.buffers`."""


@dataclass(frozen=True)
class PoolSizes:
    """Slots of the pools of each layer kind: ``kv[kind]`` for an attention kind (every
    attention kind of the model needs one), ``states`` for SSM layers. ``shared``: per
    attention kind, the name of the buffer its layers use (kinds naming the same buffer
    share it and its slots, so need the same ``kv`` size); a kind not listed gets a buffer
    named after itself."""

    kv: Mapping[str, int]
    states: int
    shared: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def uniform(cls, slots: int, states: int) -> PoolSizes:
        """``slots`` KV slots for every attention kind."""
        return cls({kind: slots for kind in ATTENTION_KINDS}, states)

    def buffer_of(self, kind: str) -> str:
        """The name of the buffer layers of ``kind`` use."""
        return self.shared.get(kind, kind)


class KVPool:
    """Keys and values of one attention layer: ``(slots, heads, head_dim)`` views each."""

    def __init__(self, keys: np.ndarray, values: np.ndarray) -> None:
        self.keys, self.values = keys, values

    def write(self, slot: int, key: np.ndarray, value: np.ndarray) -> None:
        self.keys[slot] = key
        self.values[slot] = value

    def gather(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keys and values of ``slots`` in order, as fresh C-contiguous arrays."""
        return self.keys[slots], self.values[slots]


class Memory:
    """All pools of one model instance: ``kv[i]`` is attention layer ``i``'s KV pool,
    ``states[i]`` SSM layer ``i``'s state pool ``(state slots, state_size)``, both views
    into :attr:`buffers` (per buffer name, one array, first axis = slot; the state buffer
    is :data:`STATE_BUFFER`). Raises ``ValueError`` when kinds sharing a buffer differ in
    slots."""

    def __init__(self, config: ModelConfig, sizes: PoolSizes) -> None:
        self.config = config
        self.sizes = sizes
        self.buffers = self._buffers(config, sizes)
        self.kv: dict[int, KVPool] = {}
        self.states: dict[int, np.ndarray] = {}
        rows: dict[str, int] = {}
        for index, kind in enumerate(config.layers):
            name = STATE_BUFFER if kind == "ssm" else sizes.buffer_of(kind)
            row = rows[name] = rows.get(name, -1) + 1
            buffer = self.buffers[name]
            if kind == "ssm":
                self.states[index] = buffer[:, row]
            else:
                self.kv[index] = KVPool(buffer[:, row, 0], buffer[:, row, 1])

    @staticmethod
    def _buffers(config: ModelConfig, sizes: PoolSizes) -> dict[str, np.ndarray]:
        layers: dict[str, int] = {}
        slots: dict[str, int] = {}
        for kind in config.layers:
            name = STATE_BUFFER if kind == "ssm" else sizes.buffer_of(kind)
            layers[name] = layers.get(name, 0) + 1
            size = sizes.states if kind == "ssm" else sizes.kv[kind]
            if slots.setdefault(name, size) != size:
                raise ValueError(f"the kinds sharing buffer {name!r} differ in slots")
        head = (2, config.heads, config.head_dim)
        return {name: np.zeros((slots[name], count, config.state_size) if name == STATE_BUFFER
                               else (slots[name], count, *head), dtype=np.float64)
                for name, count in layers.items()}

    def zero_state(self, slot: int) -> None:
        """Reset the recurrent state of ``slot`` in every SSM layer (a fresh request)."""
        for pool in self.states.values():
            pool[slot] = 0.0

    def copy_state(self, source: int, target: int) -> None:
        """Copy the recurrent state of slot ``source`` to ``target`` in every SSM layer."""
        for pool in self.states.values():
            pool[target] = pool[source]

    @classmethod
    def scratch(cls, config: ModelConfig, num_tokens: int) -> Memory:
        """Pools for one sequence run from scratch: one slot per token, one state."""
        return cls(config, PoolSizes.uniform(num_tokens, states=1))


def sources(model: ModelConfig, config: CacheConfig) -> dict[str, str]:
    """Per attention layer kind of ``model``, the cache component whose slots its layers
    read: its own component if ``config`` has it, else the primary."""
    primary = next(spec.name for spec in config.specs if spec.primary)
    return {kind: LAYER_COMPONENTS[kind] if LAYER_COMPONENTS[kind] in config.names else primary
            for kind in model.attention_kinds}


def state_component(model: ModelConfig, config: CacheConfig) -> str | None:
    """The cache component holding the SSM layers' states, if ``config`` has it; raises
    :class:`ConfigError` when ``model`` has SSM layers and ``config`` lacks it."""
    state = config.spec(LAYER_COMPONENTS["ssm"])
    if "ssm" in model.layers and state is None:
        raise ConfigError("a model with SSM layers needs a cache with the "
                          f"{LAYER_COMPONENTS['ssm']!r} component")
    return None if state is None else state.name


def engine_memory(model: ModelConfig, config: CacheConfig) -> Memory:
    """Device buffers for ``model`` over a cache of ``config``: pools as large as the slot
    pools of the components the layers read."""
    shapes = dict(config.pool_shapes())
    kv = {kind: shapes[name].capacity for kind, name in sources(model, config).items()}
    state = state_component(model, config)
    states = 0 if state is None else shapes[state].capacity
    return Memory(model, PoolSizes(kv, states, shared=sources(model, config)))

