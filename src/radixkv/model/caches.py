"""The cache of one exactness run: component specs for a combination, matched to a model,
with its host tier and storage tier (L3).

Every windowed component gets the model's window (``SlidingWindow(window=W)`` for ``"swa"``
layers, ``ChunkedLocal(chunk=C)`` for ``"chunked"`` layers) unless a run asks for another one
on purpose (to see a FAIL); pools are rounded up to whole pages.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..cache import CacheConfig
from ..components import ChunkedLocal, ComponentSpec, FullAttention, Mamba, SlidingWindow
from ..errors import ConfigError
from ..host import HostTier
from .model_config import ModelConfig
from .storage import L3Settings, storage_tier


@dataclass(frozen=True)
class CacheSizes:
    """Pools and windows of the cache of a run. ``capacity``: FULL slots;
    ``swa_capacity`` / ``chunked_capacity``: slots of the windowed components;
    ``states``: MAMBA state slots; ``track_interval``: tokens between MAMBA checkpoints
    (``None``: ``max(8, page size)``; rounded up to whole pages). ``window`` / ``chunk``: the
    cache's SWA window and local-attention chunk (``None``: the model's). ``host_capacity``:
    host slots of every per-token component (rounded up to whole pages; ``None``: no host
    tier), ``host_states``: host MAMBA states, ``write_policy``: the host tier's.
    ``storage``: the storage tier (``None``: none; needs a host tier), whose layouts
    follow from the model (:mod:`radixkv.model.storage`)."""

    capacity: int = 384
    swa_capacity: int = 256
    chunked_capacity: int = 256
    states: int = 32
    track_interval: int | None = None
    window: int | None = None
    chunk: int | None = None
    policy: str = "lru"
    host_capacity: int | None = None
    host_states: int = 0
    write_policy: str = "write_through"
    storage: L3Settings | None = None


def _round_up(value: int, page: int) -> int:
    return -(-value // page) * page


def component_spec(name: str, page: int, model: ModelConfig, sizes: CacheSizes) -> ComponentSpec:
    """The spec of component ``name`` for a cache with pages of ``page`` tokens; raises
    :class:`ConfigError` for a component the reference model has no layer kind for."""
    if name == "full":
        return FullAttention()
    if name == "swa":
        window = model.window if sizes.window is None else sizes.window
        return SlidingWindow(window=window, capacity=_round_up(sizes.swa_capacity, page))
    if name == "chunked":
        chunk = model.chunk if sizes.chunk is None else sizes.chunk
        return ChunkedLocal(chunk=chunk, capacity=_round_up(sizes.chunked_capacity, page))
    if name == "mamba":
        interval = sizes.track_interval or max(8, page)
        return Mamba(track_interval=_round_up(interval, page), states=sizes.states)
    raise ConfigError(f"the reference model has no layer kind for component {name!r}")


def cache_config(combo: tuple[str, ...], page: int, model: ModelConfig,
                 sizes: CacheSizes) -> CacheConfig:
    """The cache of a run of ``combo`` at page size ``page`` for ``model``."""
    specs = tuple(component_spec(name, page, model, sizes) for name in combo)
    host = None if sizes.host_capacity is None else HostTier(
        capacity=_round_up(sizes.host_capacity, page), states=sizes.host_states,
        write_policy=sizes.write_policy)
    config = CacheConfig(capacity=_round_up(sizes.capacity, page), page_size=page,
                         policy=sizes.policy, components=specs, host=host)
    if sizes.storage is None:
        return config
    return replace(config, storage=storage_tier(model, config, sizes.storage))
