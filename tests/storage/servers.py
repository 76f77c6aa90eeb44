"""The real stores of the storage tests (started and stopped by PID, see
:mod:`radixkv.storage.servers`), and a Mooncake client sized for the tests' pages."""

from __future__ import annotations

from radixkv.storage import MooncakeStorage, MooncakeStorageConfig
from radixkv.storage.servers import (
    LEASE_MS,
    MooncakeCluster,
    Process,
    RedisServer,
    free_port,
    missing,
    wait_until,
)

__all__ = ["LEASE_MS", "MooncakeCluster", "Process", "RedisServer", "free_port", "missing",
           "mooncake_backend", "wait_until"]


def mooncake_backend(cluster: MooncakeCluster, **settings: object) -> MooncakeStorage:
    """A MooncakeStorage client of ``cluster`` (buffers sized for the tests' pages)."""
    config = MooncakeStorageConfig(master_address=cluster.master_address,
                                   metadata_server=cluster.metadata_server,
                                   local_buffer_size=16 << 20, staging_bytes=4 << 20,
                                   **settings)  # type: ignore[arg-type]
    return MooncakeStorage(config)
