"""The periodic log line: off until a StatsLogger is made, then one line every N admitted
requests with the hit rate over them, why the rest missed, pool usage and evictions since
the previous line."""

from __future__ import annotations

import logging

import pytest

from radixkv import CacheConfig, HostTier, PrefixCache
from radixkv.errors import ConfigError, InvalidArgumentTypeError
from radixkv.metrics import StatsLogger


def run(cache: PrefixCache, tokens: list[int]) -> None:
    cache.finish(cache.admit(tokens))


def test_nothing_is_logged_without_a_stats_logger(caplog: pytest.LogCaptureFixture) -> None:
    cache = PrefixCache(CacheConfig(capacity=32, page_size=1))
    with caplog.at_level(logging.DEBUG):
        for i in range(20):
            run(cache, [i, i + 1])
    assert caplog.records == []


def test_a_line_every_n_requests_with_hit_rate_losses_usage_and_evictions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = PrefixCache(CacheConfig(capacity=16, page_size=1, components=("full", "swa"),
                                    sliding_window=2))
    logger = StatsLogger(cache, every=2)
    with caplog.at_level(logging.INFO, logger="radixkv.metrics"):
        run(cache, [1, 2, 3, 4])
        assert logger.step() is None  # one request so far
        run(cache, [1, 2, 3, 4, 5, 6])  # hits 4 of 6
        line = logger.step()
        assert line == ("prefix cache: 2 requests, 10 tokens, hit 40.0% (missed: unseen 60.0%);"
                        " usage full 37.5%, swa 37.5%; evicted full 0, swa 0")
        assert logger.step() is None  # nothing new since the line
        lease = cache.admit([1, 2, 3, 4, 5, 6, 7])
        cache.slide_window(lease)
        cache.finish(lease)
        cache.evict(full=16)
        run(cache, [9] * 8)
        line = logger.step()
    assert line == ("prefix cache: 2 requests, 15 tokens, hit 40.0% (missed: unseen 60.0%);"
                    " usage full 50.0%, swa 50.0%; evicted full 7, swa 7")
    assert [r.getMessage() for r in caplog.records if r.name == "radixkv.metrics"] == [
        "prefix cache: 2 requests, 10 tokens, hit 40.0% (missed: unseen 60.0%); usage full "
        "37.5%, swa 37.5%; evicted full 0, swa 0", line]


def test_losses_are_named_by_component_and_reason() -> None:
    cache = PrefixCache(CacheConfig(capacity=32, page_size=1, components=("full", "swa"),
                                    sliding_window=2))
    logger = StatsLogger(cache, every=1)
    lease = cache.admit(list(range(8)))
    cache.slide_window(lease)
    cache.finish(lease)
    logger.step()
    cache.match(list(range(4)))  # [2, 4) is a tombstone
    cache.finish(cache.admit([50, 51]))
    assert logger.step() == ("prefix cache: 1 requests, 6 tokens, hit 0.0% (missed: swa "
                             "tombstone 66.7%, unseen 33.3%); usage full 31.2%, swa 12.5%; "
                             "evicted full 0, swa 0")


def test_bad_settings_are_rejected() -> None:
    cache = PrefixCache(CacheConfig(capacity=8))
    for every in (0, -1, True, 1.5):
        with pytest.raises(ConfigError):
            StatsLogger(cache, every=every)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError):
        StatsLogger(None)  # type: ignore[arg-type]


def test_the_line_reports_the_host_tier_when_there_is_one() -> None:
    cache = PrefixCache(CacheConfig(capacity=16, page_size=1, host=HostTier(capacity=16)))
    logger = StatsLogger(cache, every=2)
    run(cache, list(range(8)))
    cache.wait()  # the backup of [0, 8) lands
    cache.evict(full=16)  # demoted: host only
    lease = cache.admit([*range(8), 50], load_back=True)  # 8 of 9 from the host
    cache.wait(lease)
    cache.finish(lease)
    line = logger.step()
    assert line is not None
    assert line.endswith("; host: hit 47.1% of the tokens, usage full 56.2%")
