"""The controller: PrefixCache, its configuration, leases and results."""

from .allocation import Allocation, AllocationState
from .cache_config import CacheConfig
from .lease import Lease, LeaseState
from .prefix_cache import PrefixCache
from .results import CacheStats, ComponentStats, MatchResult

__all__ = [
    "Allocation",
    "AllocationState",
    "CacheConfig",
    "CacheStats",
    "ComponentStats",
    "Lease",
    "LeaseState",
    "MatchResult",
    "PrefixCache",
]
