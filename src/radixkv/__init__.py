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
from .core import AllBlocksCleared, BlockRemoved, BlockStored, Lock, NodeId

__version__ = "0.1.0"

__all__ = [
    "AllBlocksCleared",
    "Allocation",
    "AllocationState",
    "BlockRemoved",
    "BlockStored",
    "CacheConfig",
    "CacheStats",
    "ComponentStats",
    "Lease",
    "LeaseState",
    "Lock",
    "MatchResult",
    "NodeId",
    "PrefixCache",
    "__version__",
    "errors",
]
