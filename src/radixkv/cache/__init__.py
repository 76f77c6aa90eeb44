"""The controller: PrefixCache, its configuration, leases and results."""

from .config import CacheConfig
from .direct import Allocation
from .lease import Lease, LeaseState
from .prefix_cache import PrefixCache
from .results import CacheStats, ComponentStats, MatchResult

__all__ = [
    "Allocation",
    "CacheConfig",
    "CacheStats",
    "ComponentStats",
    "Lease",
    "LeaseState",
    "MatchResult",
    "PrefixCache",
]
