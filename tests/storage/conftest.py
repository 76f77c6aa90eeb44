"""Fixtures of the storage tests: the real servers (one of each per test session, started
here and stopped by PID at the end) and a fresh backend of each kind per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from radixkv.storage import (
    FileStorage,
    FileStorageConfig,
    RedisStorage,
    RedisStorageConfig,
    StorageBackend,
)

from .servers import MooncakeCluster, RedisServer, missing, mooncake_backend

KINDS = ("file", "redis", "mooncake")

# the Mooncake client logs every miss at ERROR through glog, read when it first sets up
os.environ.setdefault("GLOG_minloglevel", "3")
# Mooncake's transfer engine advertises the first non-loopback interface unless told:
# every test byte stays on loopback (the segment holder gets the same, see servers.py)
os.environ.setdefault("MC_TCP_BIND_ADDRESS", "127.0.0.1")


def _require(program: str) -> None:
    reason = missing(program)
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    _require("redis-server")
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of one test alone, not started (the test may start it late, kill,
    pause or fill it)."""
    _require("redis-server")
    server = RedisServer(tmp_path / "own-redis")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[MooncakeCluster]:
    """A Mooncake cluster of one test alone (a 16 MB segment), not started (the test may
    start it late, or kill its master or segment holder)."""
    _require("mooncake_master")
    cluster = MooncakeCluster(tmp_path / "own-mooncake", segment="16 MB")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def mooncake_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MooncakeCluster]:
    _require("mooncake_master")
    cluster = MooncakeCluster(tmp_path_factory.mktemp("mooncake")).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=KINDS)
def open_backend(request: pytest.FixtureRequest,
                 tmp_path: Path) -> Iterator[Callable[[], StorageBackend]]:
    """Opens backends of one kind on one store (call it twice: two engines, one store)."""
    factory = _factory(request, tmp_path)
    opened: list[StorageBackend] = []

    def open_one() -> StorageBackend:
        opened.append(factory())
        return opened[-1]

    yield open_one
    for backend in opened:
        backend.close()


def _factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], StorageBackend]:
    if request.param == "file":
        return lambda: FileStorage(FileStorageConfig(root=tmp_path / "pages"))
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        # a prefix per test: tests share the server, never each other's pages
        config = RedisStorageConfig(unix_socket=server.socket, prefix=f"t{uuid.uuid4().hex[:8]}")
        return lambda: RedisStorage(config)
    cluster: MooncakeCluster = request.getfixturevalue("mooncake_cluster")
    return lambda: mooncake_backend(cluster)


@pytest.fixture
def backend(open_backend: Callable[[], StorageBackend]) -> StorageBackend:
    return open_backend()
