"""Device memory of the reference model: paged KV pools and recurrent-state pools.

One K pool and one V pool per attention layer, one state pool per SSM layer. Each layer kind
indexes its pools with the slot ids of the cache component that holds its KV (FULL, SWA,
chunked local) or state (MAMBA) — exactly the ids a :class:`~radixkv.PrefixCache` hands out,
so each pool is as large as the slot pool of that component.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .config import ATTENTION_KINDS, ModelConfig


@dataclass(frozen=True)
class PoolSizes:
    """Slots of the pools of each layer kind: ``kv[kind]`` for an attention kind (every
    attention kind of the model needs one), ``states`` for SSM layers."""

    kv: Mapping[str, int]
    states: int

    @classmethod
    def uniform(cls, slots: int, states: int) -> PoolSizes:
        """``slots`` KV slots for every attention kind."""
        return cls({kind: slots for kind in ATTENTION_KINDS}, states)


class KVPool:
    """Keys and values of one attention layer: ``(slots, heads, head_dim)`` each."""

    def __init__(self, slots: int, heads: int, head_dim: int) -> None:
        self.keys = np.zeros((slots, heads, head_dim), dtype=np.float64)
        self.values = np.zeros((slots, heads, head_dim), dtype=np.float64)

    def write(self, slot: int, key: np.ndarray, value: np.ndarray) -> None:
        self.keys[slot] = key
        self.values[slot] = value

    def gather(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keys and values of ``slots`` in order, as fresh C-contiguous arrays."""
        return self.keys[slots], self.values[slots]


class Memory:
    """All pools of one model instance: ``kv[i]`` is attention layer ``i``'s KV pool,
    ``states[i]`` SSM layer ``i``'s state pool ``(state slots, state_size)``."""

    def __init__(self, config: ModelConfig, sizes: PoolSizes) -> None:
        self.config = config
        self.sizes = sizes
        self.kv: dict[int, KVPool] = {}
        self.states: dict[int, np.ndarray] = {}
        for index, kind in enumerate(config.layers):
            if kind == "ssm":
                self.states[index] = np.zeros((sizes.states, config.state_size), np.float64)
            else:
                self.kv[index] = KVPool(sizes.kv[kind], config.heads, config.head_dim)

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
