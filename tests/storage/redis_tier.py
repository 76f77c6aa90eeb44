"""Engines on a redis-server of a test's own, for the cache-level Redis fault tests."""

from __future__ import annotations

from radixkv.storage import RedisStorage, RedisStorageConfig

from .fault_support import written
from .servers import RedisServer
from .tier_support import Engine, engine

RETRY = 0.5
"""The backends' retry_after_s: a test waits this long before it expects the store back."""


def on(server: RedisServer, *, socket_s: float = 5.0, **storage: object) -> Engine:
    """An engine on ``server``, its socket timeout ``socket_s``; ``storage``: StorageTier's
    settings (wait_complete unless told)."""
    config = RedisStorageConfig(unix_socket=server.socket, timeout_s=socket_s,
                                retry_after_s=RETRY)
    return engine(RedisStorage(config), **{"wait_policy": "wait_complete", **storage})


def written_to(server: RedisServer, *prompts: list[int]) -> None:
    """A first engine on ``server`` serves and writes ``prompts``, then closes."""
    written(lambda: on(server), *prompts)
