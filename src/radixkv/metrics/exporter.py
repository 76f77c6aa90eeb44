"""MetricsExporter: prometheus-client's HTTP ``/metrics`` endpoint for radixkv collectors."""

from __future__ import annotations

from types import TracebackType

from prometheus_client import start_http_server
from prometheus_client.registry import Collector, CollectorRegistry

from ..errors import ConfigError, InvalidArgumentTypeError


class MetricsExporter:
    """Serves the given collectors (each scrape reads them) on ``addr:port`` over HTTP, on a
    background thread of prometheus-client's. ``port=0`` picks a free port (see
    :attr:`port`); ``addr`` defaults to loopback, so nothing is exposed unless asked: pass
    ``"0.0.0.0"`` (every interface) or one interface's address. Use as a context manager or
    call :meth:`close`. Raises :class:`ConfigError` if it cannot bind or for a bad port or
    address (``None`` is refused: it would bind every interface),
    :class:`InvalidArgumentTypeError` for a collector that is none (give a cache as
    ``CacheCollector(cache)``)."""

    def __init__(self, *collectors: Collector, port: int = 0, addr: str = "127.0.0.1") -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ConfigError(f"port must be an int in 0..65535, got {port!r}")
        if not isinstance(addr, str) or not addr:
            raise ConfigError(f"addr must be an address to bind (\"127.0.0.1\", \"0.0.0.0\"), "
                              f"got {addr!r}")
        for collector in collectors:
            _check_collector(collector)
        self.registry = CollectorRegistry()
        for collector in collectors:
            self.registry.register(collector)
        try:
            self._server, self._thread = start_http_server(port, addr, self.registry)
        except OSError as exc:
            raise ConfigError(f"cannot serve metrics on {addr}:{port}: {exc}") from exc
        self.addr = addr
        self.port: int = self._server.server_port

    @property
    def url(self) -> str:
        return f"http://{self.addr}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and free the port; idempotent."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> MetricsExporter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _check_collector(collector: object) -> None:
    """A collector is what prometheus-client scrapes: an object with ``collect()``."""
    if callable(getattr(collector, "collect", None)):
        return
    hint = ""
    if callable(getattr(collector, "stats", None)):
        hint = " (wrap a cache in CacheCollector(cache))"
    raise InvalidArgumentTypeError(f"MetricsExporter takes collectors{hint}, got "
                                   f"{collector!r:.80}")
