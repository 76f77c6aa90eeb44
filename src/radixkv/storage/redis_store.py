"""RedisStorage: pages in a Redis server shared by a fleet of engines.

Each page is two keys: ``<prefix>:d:<key>`` holds the framed object, ``<prefix>:m:<key>``
marks it present. A put sends the data before the marker in one pipeline, so the marker
never exists before its data; ``exists_prefix`` reads markers only. An eviction under
``maxmemory`` (any policy) can then take the data and leave the marker, which reads as a
missing page at ``get_into``, or take the marker, which reads as absent: a miss either way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.tree_config import normalise_ints
from ..errors import ConfigError, ConfigTypeError
from .backend import StorageBackend
from .checks import check_clock, check_int, check_optional_int, check_seconds, check_text

try:  # the `storage` extra
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError:  # pragma: no cover - reported when a RedisStorage is built
    redis = None  # type: ignore[assignment]

_MAX_PORT = 65535


@dataclass(frozen=True)
class RedisStorageConfig:
    """Where the server is: ``unix_socket`` (a path) if given, else ``host``:``port``.
    ``prefix`` namespaces this fleet's keys in a shared server (``clear()`` drops exactly
    those). ``timeout_s`` bounds every socket operation (connect, send, read) and
    ``retries`` how often one that failed on the connection is tried again at once (a
    pooled connection is stale after a server restart); one that timed out is not tried
    again, so a stalled server costs a call one ``timeout_s``. ``ttl_s`` expires pages
    (``None``: only ``maxmemory`` evicts). ``retry_after_s`` and ``clock``: see
    :class:`StorageBackend`. Every field is checked here (a port past 65535 or a ``db``
    that is no int would otherwise be a fault at every call): :class:`ConfigTypeError` for
    a wrong type, :class:`ConfigError` for a bad value."""

    host: str = "127.0.0.1"
    port: int = 6379
    unix_socket: str | None = None
    db: int = 0
    password: str | None = None
    prefix: str = "radixkv"
    timeout_s: float = 1.0
    retries: int = 1
    ttl_s: int | None = None
    retry_after_s: float = 1.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    def __post_init__(self) -> None:
        normalise_ints(self)
        if isinstance(self.unix_socket, os.PathLike):
            object.__setattr__(self, "unix_socket", os.fspath(self.unix_socket))
        for name in ("host", "unix_socket", "password", "prefix"):
            check_text(f"RedisStorageConfig.{name}", getattr(self, name),
                       optional=name in ("unix_socket", "password"))
        check_int("RedisStorageConfig.port", self.port, 1, _MAX_PORT)
        check_int("RedisStorageConfig.db", self.db, 0)
        check_int("RedisStorageConfig.retries", self.retries, 0)
        check_optional_int("RedisStorageConfig.ttl_s", self.ttl_s, 1)
        check_seconds("RedisStorageConfig.timeout_s", self.timeout_s, positive=True)
        check_seconds("RedisStorageConfig.retry_after_s", self.retry_after_s, positive=False)
        check_clock("RedisStorageConfig.clock", self.clock)
        if any(char in self.prefix for char in " *?[]"):
            raise ConfigError("RedisStorageConfig.prefix must be non-empty, without glob chars")


class RedisStorage(StorageBackend):
    """Pages in Redis; see :class:`StorageBackend` for the contract. Connecting is lazy: a
    server that is down at start costs faults, not an exception."""

    def __init__(self, config: RedisStorageConfig) -> None:
        if not isinstance(config, RedisStorageConfig):
            raise ConfigTypeError(f"RedisStorage needs a RedisStorageConfig, got {config!r:.80}")
        if redis is None:
            raise ImportError("RedisStorage needs `redis`: pip install 'radixkv[storage]'")
        super().__init__(config.retry_after_s, config.clock)
        self._config = config
        self._data = f"{config.prefix}:d:"
        self._mark = f"{config.prefix}:m:"
        connection: dict[str, Any] = {
            "db": config.db, "password": config.password, "socket_timeout": config.timeout_s,
            "socket_connect_timeout": config.timeout_s,
            # a stale connection is retried at once; a timeout is not (one timeout a call)
            "retry": Retry(NoBackoff(), config.retries,
                           supported_errors=(redis.exceptions.ConnectionError,))}
        if config.unix_socket is not None:
            connection["unix_socket_path"] = config.unix_socket
        else:
            connection.update(host=config.host, port=config.port)
        self._client = redis.Redis(**connection)

    def _exists(self, keys: list[str]) -> list[bool]:
        markers = self._client.mget([self._mark + key for key in keys])
        return [marker is not None for marker in markers]

    def _read(self, keys: list[str], size: int) -> list[bytes | str | None]:
        blobs: list[bytes | str | None] = self._client.mget([self._data + key for key in keys])
        return blobs

    def _write(self, keys: list[str], blobs: list[bytes]) -> list[str | None]:
        pipe = self._client.pipeline(transaction=False)
        for key, blob in zip(keys, blobs):
            pipe.set(self._data + key, blob, ex=self._config.ttl_s)
            pipe.set(self._mark + key, b"1", ex=self._config.ttl_s)
        replies = pipe.execute(raise_on_error=False)
        pairs = zip(replies[::2], replies[1::2])
        return [self._reply_fault(data, marker) for data, marker in pairs]

    def _reply_fault(self, *replies: object) -> str | None:
        for reply in replies:
            if isinstance(reply, Exception):
                return self._classify(reply)
        return None

    def _remove(self, keys: list[str]) -> None:
        # markers first: a reader never finds a marker whose data is already gone on purpose
        self._client.delete(*[self._mark + key for key in keys],
                            *[self._data + key for key in keys])

    def _clear(self) -> None:
        for pattern in (self._mark + "*", self._data + "*"):
            batch: list[bytes] = []
            for name in self._client.scan_iter(match=pattern, count=1000):
                batch.append(name)
                if len(batch) == 1000:
                    self._client.delete(*batch)
                    batch = []
            if batch:
                self._client.delete(*batch)

    def _classify(self, error: Exception) -> str:
        assert redis is not None
        if isinstance(error, redis.exceptions.TimeoutError):
            return "timeout"
        if isinstance(error, redis.exceptions.ConnectionError):
            return "unavailable"
        if isinstance(error, redis.exceptions.OutOfMemoryError):  # maxmemory, noeviction
            return "full"
        return "error"

    def close(self) -> None:
        self._client.close()
