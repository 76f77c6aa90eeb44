"""Caches with a storage tier for the tests: real host/device buffers, one FileStorage (or any
backend) shared by "engines" that are separate caches, audited after every call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from radixkv import (
    CacheConfig,
    HostTier,
    NumpyCopyConfig,
    NumpyCopyEngine,
    PrefixCache,
    StorageLayout,
    StorageTier,
)
from radixkv.storage import StorageBackend

PAGE = 4
ROW = (2, 3)
MODEL = "tier-test-model"
SHAPES: dict[str, dict[str, Any]] = {
    "full": {},
    "full+swa": {"components": ("full", "swa"), "sliding_window": 8},
    "full+mamba": {"components": ("full", "mamba"), "mamba_states": 32,
                   "mamba_track_interval": PAGE},
}


@dataclass
class Engine:
    """One engine: its cache and the buffers its copy engine moves bytes between."""

    cache: PrefixCache
    device: dict[str, np.ndarray] = field(default_factory=dict)
    host: dict[str, np.ndarray] = field(default_factory=dict)

    def audited(self) -> None:
        self.cache.check_invariants()


def layouts(names: tuple[str, ...]) -> tuple[StorageLayout, ...]:
    return tuple(StorageLayout(model=MODEL, dtype="float32", page_size=PAGE, component=name,
                               layers=(0, 2), row_shape=ROW) for name in names)


def engine(backend: StorageBackend, shape: str = "full", *, capacity: int = 256,
           host_capacity: int = 512, write_policy: str = "write_through",
           copies: NumpyCopyConfig | None = None, events: bool = False,
           event_queue_limit: int = 100_000, **storage: Any) -> Engine:
    """A cache with device ``capacity`` and host ``host_capacity`` slots over ``backend``
    (its copy engine configured by ``copies``; ``events``: KV events on, STORAGE ones too;
    ``storage``: StorageTier's settings)."""
    extra = SHAPES[shape]
    names = tuple(extra.get("components", ("full",)))
    copier = NumpyCopyEngine(copies)
    device = {name: np.zeros((32 if name == "mamba" else capacity, *ROW), np.float32)
              for name in names}
    host = {name: np.zeros((32 if name == "mamba" else host_capacity, *ROW), np.float32)
            for name in names}
    for name in names:
        copier.register(name, "device", device[name])
        copier.register(name, "host", host[name])
    config = CacheConfig(
        capacity=capacity, page_size=PAGE, **extra, events=events,
        event_queue_limit=event_queue_limit,
        host=HostTier(capacity=host_capacity, states=32, write_policy=write_policy),
        storage=StorageTier(layouts=layouts(names), **{"prefetch_threshold": 8, **storage}))
    return Engine(PrefixCache(config, copier, storage=backend), device, host)


def kv_of(tokens: list[int]) -> np.ndarray:
    """The KV rows an engine computes for ``tokens``: a pure function of each token and its
    position, so two engines computing the same prompt write the same bytes."""
    positions = np.arange(len(tokens), dtype=np.float32)
    values = np.asarray(tokens, dtype=np.float32) * 1000 + positions
    return np.repeat(values[:, None, None], ROW[0] * ROW[1], axis=1).reshape(-1, *ROW)


def serve(made: Engine, tokens: list[int]) -> int:
    """Admit ``tokens`` with load-back, wait for its copies, compute what was not cached
    (rows of kv_of), checkpoint the state at the end for MAMBA, finish; returns the
    cached length the lease started with."""
    cache = made.cache
    lease = cache.admit(tokens, load_back=True)
    made.audited()
    cache.wait(lease)
    made.audited()
    cached = lease.cached_length
    rows = kv_of(tokens)
    made.device["full"][lease.slots[cached:]] = rows[cached:]
    if "mamba" in made.device:
        end = len(tokens) - len(tokens) % PAGE
        if end > lease.tree_owned:
            cache.checkpoint(lease, end)
            made.audited()
    cache.finish(lease)
    made.audited()
    cache.poll()
    made.audited()
    return cached
