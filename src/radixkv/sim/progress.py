"""A one-line progress bar on stderr (only when it is a terminal, unless forced)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class ProgressBar:
    """``update(done, total)`` redraws at most ten times a second, with the time since the
    first update and, once something is done, the time left at the pace so far; ``close()``
    ends the line (the next update starts a new clock). ``prefix`` names what runs (e.g.
    ``run 2/6``)."""

    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None,
                 width: int = 30, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.width, self.prefix = width, ""
        self._clock = clock
        self._last = 0.0
        self._started: float | None = None
        self._drawn = 0  # characters of the line drawn last (0: none)

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if self._started is None:
            self._started = now
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        filled = self.width * done // max(total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = now - self._started
        line = f"{self.prefix} [{bar}] {done}/{total} requests, {_duration(elapsed)}"
        if 0 < done < total:
            line += f", ~{_duration(elapsed * (total - done) / done)} left"
        # a shorter line blanks what is left of the longer one before it
        self.stream.write("\r" + line.ljust(self._drawn))
        self.stream.flush()
        self._drawn = len(line)

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = 0
        self._started = None


def _duration(seconds: float) -> str:
    """``4 s``, ``2 min 05 s``, ``1 h 03 min``."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
