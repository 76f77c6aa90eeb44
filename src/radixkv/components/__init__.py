"""Components: what each attention type's per-node value means."""

from .base import Component
from .full import FullComponent
from .mamba import MambaComponent
from .swa import SlidingWindowComponent, WindowInput

__all__ = [
    "Component",
    "FullComponent",
    "MambaComponent",
    "SlidingWindowComponent",
    "WindowInput",
]
