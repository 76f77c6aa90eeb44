"""Issue #33, item 6, on metrics: what would fail at the first scrape or log line, or bind
every interface, is refused when the exporter, collector or logger is made."""

from __future__ import annotations

import logging
import urllib.request

import pytest

pytest.importorskip("prometheus_client", reason="pip install -e '.[metrics]'")

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import ConfigError, InvalidArgumentTypeError
from radixkv.metrics import CacheCollector, MetricsExporter, StatsLogger


def cache() -> PrefixCache:
    return PrefixCache(CacheConfig(capacity=64, page_size=4))


@pytest.mark.parametrize("addr", [None, "", 127001])
def test_the_exporter_refuses_an_address_that_is_none(addr: object) -> None:
    with pytest.raises(ConfigError, match="addr must be an address"):
        MetricsExporter(CacheCollector(cache()), addr=addr)  # type: ignore[arg-type]


def test_the_exporter_binds_loopback_unless_told() -> None:
    with MetricsExporter(CacheCollector(cache())) as exporter:
        assert exporter.addr == "127.0.0.1"
        assert exporter._server.server_address[0] == "127.0.0.1"
        assert exporter.url == f"http://127.0.0.1:{exporter.port}/metrics"
        with urllib.request.urlopen(exporter.url, timeout=10) as reply:
            assert reply.status == 200


@pytest.mark.parametrize("collector", ["x", 3, object()])
def test_the_exporter_refuses_what_is_no_collector(collector: object) -> None:
    with pytest.raises(InvalidArgumentTypeError, match="takes collectors, got"):
        MetricsExporter(collector)  # type: ignore[arg-type]


def test_the_exporter_given_a_cache_says_to_wrap_it() -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"CacheCollector\(cache\)"):
        MetricsExporter(cache())  # type: ignore[arg-type]


@pytest.mark.parametrize("publisher", ["x", 1, object()])
def test_the_collector_refuses_a_publisher_that_is_none(publisher: object) -> None:
    with pytest.raises(InvalidArgumentTypeError, match="publisher must be a KVEventPublisher"):
        CacheCollector(cache(), publisher)  # type: ignore[arg-type]


def test_the_stats_logger_takes_a_level_name_as_logging_does(
        caplog: pytest.LogCaptureFixture) -> None:
    made = cache()
    logger = StatsLogger(made, every=1, level="WARNING")
    assert logger.level == logging.WARNING
    made.finish(made.admit([1, 2, 3, 4]))
    with caplog.at_level(logging.WARNING, logger="radixkv.metrics"):
        line = logger.step()
    assert line is not None
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, line)]


@pytest.mark.parametrize(("level", "error"), [
    ("LOUD", ConfigError), ("info", ConfigError), (2.5, InvalidArgumentTypeError),
    (None, InvalidArgumentTypeError), (True, InvalidArgumentTypeError)])
def test_the_stats_logger_refuses_a_level_logging_would_not_take(
        level: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="level"):
        StatsLogger(cache(), level=level)  # type: ignore[arg-type]


def test_the_stats_logger_refuses_a_logger_that_is_none() -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"logger must be a logging\.Logger"):
        StatsLogger(cache(), logger="radixkv")  # type: ignore[arg-type]
