"""A shared store named by one URL, as the engine integrations take it from a flag or an
environment variable: ``redis://[:PASSWORD@]HOST[:PORT][/DB]``,
``redis+unix:///PATH/redis.sock[?db=N]`` or ``file:///PATH``."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..errors import ConfigError
from .backend import StorageBackend

__all__ = ["SCHEMES", "check_store_url", "redis_fields", "store_from_url"]

SCHEMES = ("redis", "redis+unix", "file")


def check_store_url(url: str) -> None:
    """Raise :class:`ConfigError` saying what is wrong with ``url``; builds no client (the
    ``storage`` extra may be missing where this runs). Pure."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        if not parts.path:
            raise ConfigError(f"{url!r}: file:/// needs a path")
    elif parts.scheme in ("redis", "redis+unix"):
        redis_fields(url)
    else:
        raise ConfigError(f"{url!r}: the scheme must be redis://, redis+unix:// or file://")


def redis_fields(url: str) -> dict[str, Any]:
    """The ``RedisStorageConfig`` fields of a ``redis://`` or ``redis+unix://`` URL; raises
    :class:`ConfigError` for a port or db that is no number, or a socket without a path."""
    parts = urlsplit(url)
    password = unquote(parts.password) if parts.password else None
    try:
        if parts.scheme == "redis+unix":
            db = int(parse_qs(parts.query).get("db", ["0"])[0])
            if not parts.path:
                raise ValueError("no socket path")
            return {"unix_socket": parts.path, "db": db, "password": password}
        db = int(parts.path.strip("/") or 0)
        return {"host": parts.hostname or "127.0.0.1", "port": parts.port or 6379, "db": db,
                "password": password}
    except ValueError as error:
        raise ConfigError(f"{url!r}: {error}") from None


def store_from_url(url: str, prefix: str) -> StorageBackend:
    """The store ``url`` names, its Redis keys under ``prefix``. Raises
    :class:`ConfigError` for a bad URL, :class:`ImportError` without the ``storage`` extra
    (Redis)."""
    check_store_url(url)
    parts = urlsplit(url)
    if parts.scheme == "file":
        from .file import FileStorage, FileStorageConfig

        return FileStorage(FileStorageConfig(root=parts.path))
    from .redis_store import RedisStorage, RedisStorageConfig

    return RedisStorage(RedisStorageConfig(prefix=prefix, **redis_fields(url)))
