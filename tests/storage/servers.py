"""The real stores of the storage tests (started and stopped by PID, see
:mod:`radixkv.storage.servers`), and a Mooncake client sized for the tests' pages."""

from __future__ import annotations

import time
from collections.abc import Callable

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

__all__ = ["LEASE_MS", "MooncakeCluster", "Process", "RedisServer", "eventually", "free_port",
           "missing", "mooncake_backend", "wait_until"]


def eventually(probe: Callable[[], bool], timeout: float = 15.0) -> bool:
    """Whether ``probe()`` comes true within ``timeout`` seconds (tried every 0.2 s)."""
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def mooncake_backend(cluster: MooncakeCluster, **settings: object) -> MooncakeStorage:
    """A MooncakeStorage client of ``cluster`` (buffers sized for the tests' pages)."""
    config = MooncakeStorageConfig(master_address=cluster.master_address,
                                   metadata_server=cluster.metadata_server,
                                   local_buffer_size=16 << 20, staging_bytes=4 << 20,
                                   **settings)  # type: ignore[arg-type]
    return MooncakeStorage(config)
