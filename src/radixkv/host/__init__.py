"""The host tier (L2): host memory below the device, its controller and its copy engines."""

from .copy_engine import Completion, Copy, CopyEngine, Direction
from .host_config import WRITE_POLICIES, HostTier, WritePolicy
from .numpy_engine import NumpyCopyConfig, NumpyCopyEngine

__all__ = [
    "WRITE_POLICIES",
    "Completion",
    "Copy",
    "CopyEngine",
    "Direction",
    "HostTier",
    "NumpyCopyConfig",
    "NumpyCopyEngine",
    "WritePolicy",
]
