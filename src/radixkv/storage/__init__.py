"""The shared storage tier (L3): page stores that engines share, keyed by content.

``StorageLayout`` says what a component's page bytes are and turns page hashes into keys;
``StorageBackend`` is the store interface (``FileStorage``, ``RedisStorage``,
``MooncakeStorage``); ``StorageWorker`` runs a backend off the scheduler's thread.
See docs/storage.md.
"""

from .backend import StorageBackend, StorageFault
from .backend_stats import FAULTS, StorageStats
from .file import FileStorage, FileStorageConfig
from .layout import StorageLayout
from .mooncake_store import MooncakeStorage, MooncakeStorageConfig
from .redis_store import RedisStorage, RedisStorageConfig
from .rows import PageRows
from .storage_config import WAIT_POLICIES, StorageTier
from .tier_stats import StorageTierStats
from .worker import StorageWorker
from .writes import STORAGE_MEDIUM

__all__ = [
    "FAULTS",
    "STORAGE_MEDIUM",
    "WAIT_POLICIES",
    "FileStorage",
    "FileStorageConfig",
    "MooncakeStorage",
    "MooncakeStorageConfig",
    "PageRows",
    "RedisStorage",
    "RedisStorageConfig",
    "StorageBackend",
    "StorageFault",
    "StorageLayout",
    "StorageStats",
    "StorageTier",
    "StorageTierStats",
    "StorageWorker",
]
