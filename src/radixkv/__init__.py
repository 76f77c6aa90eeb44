"""radixkv: the prefix cache of an LLM serving scheduler.

A radix tree over token ids finds how much of a request's prompt already has KV state; a
request's life-cycle is ``admit`` → ``extend``/``commit`` → ``finish`` (or ``abort``).
"""

from . import errors
from .cache import (
    Allocation,
    AllocationState,
    CacheConfig,
    CacheStats,
    ComponentStats,
    Lease,
    LeaseState,
    MatchResult,
    PrefixCache,
)
from .components import (
    CacheShape,
    ChunkedLocal,
    Component,
    ComponentSpec,
    FullAttention,
    Mamba,
    PoolShape,
    SlidingWindow,
    WindowedComponent,
    WindowInput,
    register_component,
)
from .components.dependencies import supported_combinations
from .components.request import RequestSide, StateSide, TokenSide
from .core import AllBlocksCleared, BlockRemoved, BlockStored, Lock, NodeId
from .core.node import Node
from .host import (
    Copy,
    CopyEngine,
    Direction,
    HostTier,
    NumpyCopyConfig,
    NumpyCopyEngine,
    WritePolicy,
)
from .storage import StorageLayout, StorageTier

__version__ = "0.1.0"

__all__ = [
    "AllBlocksCleared",
    "Allocation",
    "AllocationState",
    "BlockRemoved",
    "BlockStored",
    "CacheConfig",
    "CacheShape",
    "CacheStats",
    "ChunkedLocal",
    "Component",
    "ComponentSpec",
    "ComponentStats",
    "Copy",
    "CopyEngine",
    "Direction",
    "FullAttention",
    "HostTier",
    "Lease",
    "LeaseState",
    "Lock",
    "Mamba",
    "MatchResult",
    "Node",
    "NodeId",
    "NumpyCopyConfig",
    "NumpyCopyEngine",
    "PoolShape",
    "PrefixCache",
    "RequestSide",
    "SlidingWindow",
    "StateSide",
    "StorageLayout",
    "StorageTier",
    "TokenSide",
    "WindowInput",
    "WindowedComponent",
    "WritePolicy",
    "__version__",
    "errors",
    "register_component",
    "supported_combinations",
]
