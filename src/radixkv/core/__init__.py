"""The component-agnostic radix tree core."""

from .events import AllBlocksCleared, BlockRemoved, BlockStored, KVEvent
from .policy import POLICIES, EvictionPolicy, EvictionQueue, make_policy
from .tree import TreeCore
from .tree_config import TreeConfig
from .types import Lock, NodeId, TreeEvict, TreeInsert, TreeMatch

__all__ = [
    "POLICIES",
    "AllBlocksCleared",
    "BlockRemoved",
    "BlockStored",
    "EvictionPolicy",
    "EvictionQueue",
    "KVEvent",
    "Lock",
    "NodeId",
    "TreeConfig",
    "TreeCore",
    "TreeEvict",
    "TreeInsert",
    "TreeMatch",
    "make_policy",
]
