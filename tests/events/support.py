"""Shared helpers of the events tests: caches, free ports, bounded waiting."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from radixkv import CacheConfig, PrefixCache

if TYPE_CHECKING:
    from radixkv.events import KVEventPublisher

T = TypeVar("T")

LOOPBACK = "tcp://127.0.0.1:0"
"""Bind on loopback, port chosen by the OS (the publisher reports the real endpoint)."""


def make_cache(page_size: int = 4, capacity: int = 256, **config: Any) -> PrefixCache:
    return PrefixCache(CacheConfig(capacity=capacity, page_size=page_size, events=True, **config))


def insert(cache: PrefixCache, tokens: list[int], namespace: object = None) -> int:
    """Run one request through the cache (admit, then finish) and return what it holds."""
    return int(cache.finish(cache.admit(tokens, namespace)))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def wait_for(probe: Callable[[], T], done: Callable[[T], bool], timeout: float = 10.0,
             interval: float = 0.02) -> T:
    """Call ``probe`` until ``done(result)`` or ``timeout`` seconds; return the last result
    (the caller asserts on it, so a timeout fails with the last value seen)."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if done(result) or time.monotonic() >= deadline:
            return result
        time.sleep(interval)


def publisher(**options: Any) -> KVEventPublisher:
    """A publisher bound on loopback (PUB and replay, ports chosen by the OS), without
    heartbeats unless asked, so that tests can count batches exactly."""
    from radixkv.events import KVEventPublisher  # only where the events extra is installed

    settings: dict[str, Any] = {"endpoint": LOOPBACK, "bind": True, "replay_endpoint": LOOPBACK,
                                "heartbeat_interval": None}
    return KVEventPublisher(**(settings | options))


class FailingSends:
    """Wraps the publisher's PUB socket so that its next ``failures`` sends fail."""

    def __init__(self, sock: Any, failures: int) -> None:
        self.sock = sock
        self.failures = failures

    def send_multipart(self, frames: list[bytes], flags: int = 0) -> None:
        if self.failures:
            self.failures -= 1
            import zmq  # only where the events extra is installed

            raise zmq.ZMQError(zmq.EAGAIN, "injected send failure")
        self.sock.send_multipart(frames, flags)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def require_dynamo_indexer() -> Any:
    """Skip the calling test module unless pyzmq, msgpack and NVIDIA Dynamo's KV indexer
    (``ai-dynamo-runtime``, part of the dev extra) are installed; returns the zmq module."""
    import pytest

    zmq = pytest.importorskip("zmq", reason="pyzmq is not installed (pip install -e '.[events]')")
    pytest.importorskip("msgpack", reason="msgpack is not installed (pip install -e '.[events]')")
    from .dynamo_indexer import indexer_installed

    if not indexer_installed():
        pytest.skip("NVIDIA Dynamo's KV indexer is not installed: pip install "
                    "ai-dynamo-runtime==1.6.1 (part of the dev extra)", allow_module_level=True)
    return zmq
