"""The reference engine's storage tier (L3): what its stored pages are, so that engines of
one model share pages and any other model can only miss.

Each cache component's rows are one slot's row of the buffer that holds it
(:mod:`radixkv.model.memory`): ``(layers, 2, heads, head_dim)`` float64 for KV,
``(layers, state_size)`` for states. :func:`layouts` describes them as
:class:`~radixkv.storage.StorageLayout` s whose model id names the weights: every field of
the :class:`ModelConfig`, seed included, since the seed draws the weights.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from ..cache import CacheConfig
from ..storage import StorageLayout, StorageTier
from .memory import sources, state_component
from .model_config import ModelConfig

MODEL_PREFIX = "radixkv-reference"
ROW_LAYOUT = "rows: slot, layer (bottom up), then k/v, head, dim for KV; channel for states"


@dataclass(frozen=True)
class L3Settings:
    """The storage tier of a run (:class:`~radixkv.storage.StorageTier` fields):
    ``prefetch_threshold`` tokens, ``wait_policy``, ``timeout_s``. ``model``: the model id
    the layouts carry (``None``: :func:`model_id` of the run's model; an explicit id shared
    by two different models makes their keys collide, which only a broken setup does)."""

    prefetch_threshold: int = 32
    wait_policy: str = "wait_complete"
    timeout_s: float = 1.0
    model: str | None = None


def model_id(model: ModelConfig) -> str:
    """A name for ``model``'s weights: its seed and a digest of every config field (the
    layer stack, shapes, window, chunk, seed). Pure."""
    fields = json.dumps(asdict(model), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(fields.encode()).hexdigest()[:16]
    return f"{MODEL_PREFIX} seed={model.seed} {digest}"


def row_shapes(model: ModelConfig, config: CacheConfig) -> dict[str, tuple[int, ...]]:
    """Per component of ``config`` that a layer of ``model`` uses, the shape of one slot's
    row of its buffer (as :func:`~radixkv.model.caches.engine_memory` builds it)."""
    by_kind = sources(model, config)
    state = state_component(model, config)
    layers: dict[str, int] = {}
    for kind in model.layers:
        name = state if kind == "ssm" else by_kind[kind]
        assert name is not None  # state_component raised for SSM layers without one
        layers[name] = layers.get(name, 0) + 1
    return {name: (count, model.state_size) if name == state
            else (count, 2, model.heads, model.head_dim) for name, count in layers.items()}


def layouts(model: ModelConfig, config: CacheConfig, name: str | None = None
            ) -> tuple[StorageLayout, ...]:
    """One layout per component of ``config`` (which has no storage tier yet), for
    ``model``'s rows; ``name``: the model id (``None``: :func:`model_id`). A component no
    layer uses has an empty row shape (it never holds bytes)."""
    shapes = row_shapes(model, config)
    by_kind = sources(model, config)
    stack = ",".join(model.layers)
    result = []
    for component in config.names:
        kinds = [kind for kind, source in by_kind.items() if source == component]
        if component == state_component(model, config):
            kinds.append("ssm")
        result.append(StorageLayout(
            model=model_id(model) if name is None else name, dtype="float64",
            page_size=config.page_size, component=component, layers=(0, len(model.layers)),
            row_shape=shapes.get(component, ()), page_hash=config.page_hash,
            bigram=config.bigram,
            layout=f"{ROW_LAYOUT}; kinds {','.join(kinds)}; stack {stack}"))
    return tuple(result)


def storage_tier(model: ModelConfig, config: CacheConfig, settings: L3Settings) -> StorageTier:
    """The :class:`StorageTier` of a run of ``model`` over ``config``."""
    return StorageTier(layouts=layouts(model, config, settings.model),
                       prefetch_threshold=settings.prefetch_threshold,
                       wait_policy=settings.wait_policy, timeout_s=settings.timeout_s)
