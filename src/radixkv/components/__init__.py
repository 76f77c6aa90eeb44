"""Components: what each attention type's per-node value means, and the specs that name them."""

from .base import Component
from .chunked import ChunkedLocalComponent
from .full import FullComponent
from .mamba import MambaComponent
from .registry import component_type, register_component, registered_specs
from .spec import (
    CacheShape,
    ChunkedLocal,
    ComponentSpec,
    FullAttention,
    Mamba,
    PoolShape,
    SlidingWindow,
)
from .swa import SlidingWindowComponent
from .window import WindowedComponent, WindowInput

register_component(FullAttention, FullComponent)
register_component(SlidingWindow, SlidingWindowComponent)
register_component(ChunkedLocal, ChunkedLocalComponent)
register_component(Mamba, MambaComponent)

__all__ = [
    "CacheShape",
    "ChunkedLocal",
    "ChunkedLocalComponent",
    "Component",
    "ComponentSpec",
    "FullAttention",
    "FullComponent",
    "Mamba",
    "MambaComponent",
    "PoolShape",
    "SlidingWindow",
    "SlidingWindowComponent",
    "WindowInput",
    "WindowedComponent",
    "component_type",
    "register_component",
    "registered_specs",
]
