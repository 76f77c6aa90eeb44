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
    "FullAttention",
    "Lease",
    "LeaseState",
    "Lock",
    "Mamba",
    "MatchResult",
    "Node",
    "NodeId",
    "PoolShape",
    "PrefixCache",
    "RequestSide",
    "SlidingWindow",
    "StateSide",
    "TokenSide",
    "WindowInput",
    "WindowedComponent",
    "__version__",
    "errors",
    "register_component",
    "supported_combinations",
]
