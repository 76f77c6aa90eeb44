"""Components: what each attention type's per-node value means."""

from .base import Component
from .full import FullComponent

__all__ = ["Component", "FullComponent"]
