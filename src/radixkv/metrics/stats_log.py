"""StatsLogger: the periodic one-line summary engines print, through ``logging``.

Nothing is logged unless a :class:`StatsLogger` is made and :meth:`StatsLogger.step` is
called (once per scheduler step); it needs no extra package.
"""

from __future__ import annotations

import logging

from ..cache.prefix_cache import PrefixCache
from ..cache.results import CacheStats
from ..errors import ConfigError, InvalidArgumentTypeError

log = logging.getLogger("radixkv.metrics")


class StatsLogger:
    """Every ``every`` admitted requests, logs (logger ``radixkv.metrics``, at ``level``)
    the hit rate over those requests with why the rest missed, per component and reason;
    each pool's usage; and what was evicted since the previous line. :meth:`step` costs one
    dict read until a line is due, then one ``stats()``. ``level`` is an int or, as
    ``Logger.setLevel`` takes it, a level's name (``"INFO"``); ``logger`` a
    ``logging.Logger`` or ``LoggerAdapter``. Raises :class:`ConfigError` for an unknown
    level name or a bad ``every``, :class:`InvalidArgumentTypeError` for a wrong type."""

    def __init__(self, cache: PrefixCache, every: int = 100, level: int | str = logging.INFO,
                 logger: logging.Logger | logging.LoggerAdapter[logging.Logger] = log) -> None:
        if not isinstance(cache, PrefixCache):
            raise InvalidArgumentTypeError(f"expected a PrefixCache, got {cache!r:.80}")
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ConfigError(f"every must be an int >= 1, got {every!r}")
        if not isinstance(logger, (logging.Logger, logging.LoggerAdapter)):
            raise InvalidArgumentTypeError(f"logger must be a logging.Logger, got {logger!r:.80}")
        self.level = _level(level)
        self.cache, self.every, self.logger = cache, every, logger
        self._last = cache.stats()

    def step(self) -> str | None:
        """Log a line if ``every`` requests were admitted since the last one; return it."""
        if self.cache.counters["admitted"] - self._last.admitted < self.every:
            return None
        now = self.cache.stats()
        line = summary(self._last, now)
        self._last = now
        self.logger.log(self.level, "%s", line)
        return line


def _level(level: object) -> int:
    """A logging level as an int: an int as it is, a registered name (``"INFO"``, or one
    added by ``logging.addLevelName``) as logging maps it."""
    if isinstance(level, bool) or not isinstance(level, (int, str)):
        raise InvalidArgumentTypeError(f"level must be an int or a level name, got {level!r}")
    if isinstance(level, int):
        return level
    number = logging.getLevelName(level)  # an int for a registered name
    if not isinstance(number, int):
        raise ConfigError(f"unknown logging level {level!r} (e.g. \"INFO\", \"WARNING\")")
    return number


def summary(before: CacheStats, now: CacheStats) -> str:
    """One line describing what happened between two ``stats()`` snapshots."""
    queried = now.match_tokens - before.match_tokens
    hits = now.hit_tokens - before.hit_tokens
    lost = [(f"{kind} {c.lost_reason}", c.lost - before.components[kind].lost)
            for kind, c in now.components.items()]
    lost.append(("max_match", now.capped_tokens - before.capped_tokens))
    lost.append(("unseen", now.unseen_tokens - before.unseen_tokens))
    missed = ", ".join(f"{name} {_share(count, queried)}" for name, count in lost if count)
    usage = ", ".join(
        f"{kind} {_share(c.pool_capacity - c.pool_available, c.pool_capacity)}"
        for kind, c in now.components.items())
    evicted = ", ".join(
        f"{kind} {sum(c.evicted.values()) - sum(before.components[kind].evicted.values())}"
        for kind, c in now.components.items())
    return (f"prefix cache: {now.admitted - before.admitted} requests, {queried} tokens, "
            f"hit {_share(hits, queried)} (missed: {missed or 'none'}); usage {usage}; "
            f"evicted {evicted}{_tiers(before, now, queried)}")


def _tiers(before: CacheStats, now: CacheStats, queried: int) -> str:
    """The host tier's and the storage tier's part of the line (empty without them)."""
    parts = ""
    host, was = now.host, before.host
    if host is not None and was is not None:
        usage = ", ".join(
            f"{kind} {_share(c.pool_capacity - c.pool_available, c.pool_capacity)}"
            for kind, c in host.components.items())
        parts += (f"; host: hit {_share(host.host_hit_tokens - was.host_hit_tokens, queried)}"
                  f" of the tokens, usage {usage}")
    storage, old = now.storage, before.storage
    if storage is not None and old is not None:
        parts += (f"; L3: restored {storage.restored_tokens - old.restored_tokens} tokens, "
                  f"wrote {storage.written_pages - old.written_pages} pages, "
                  f"{storage.faults - old.faults} faults")
    return parts


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "0.0%"
