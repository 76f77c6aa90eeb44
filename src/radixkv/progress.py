"""ProgressBar: one line on a terminal for the long commands (``verify``, ``sim``), with
how much is done, the time spent and the time left at the pace so far."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

Progress = Callable[[int, int], None]
"""Called with (items done, items in all)."""


class ProgressBar:
    """``update(done, total)``, or calling the bar, redraws the line at most ten times a
    second and always when ``done`` reaches ``total``, which also ends the line; the next
    update then starts a new clock. ``close()`` ends a line left unfinished (a run cut
    short, an error to print). ``prefix`` names what runs (e.g. ``run 2/6``), ``unit`` what
    is counted. Draws only when ``stream`` (default: stderr) is a terminal, unless
    ``enabled`` says otherwise."""

    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None,
                 width: int = 30, unit: str = "requests", prefix: str = "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.width, self.unit, self.prefix = width, unit, prefix
        self._clock = clock
        self._last = 0.0
        self._started: float | None = None
        self._drawn = 0  # characters of the line drawn last (0: none)

    def __call__(self, done: int, total: int) -> None:
        self.update(done, total)

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if self._started is None:
            self._started = now
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        line = self._line(done, total, now - self._started)
        # a shorter line blanks what is left of the longer one before it
        self.stream.write("\r" + line.ljust(self._drawn))
        self._drawn = len(line)
        if done >= total:
            self.close()
        else:
            self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = 0
        self._started = None

    def _line(self, done: int, total: int, elapsed: float) -> str:
        filled = self.width * min(done, total) // max(total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        counted = f"{done}/{total} {self.unit}".rstrip()
        line = f"{self.prefix} [{bar}] " if self.prefix else f"[{bar}] "
        line += f"{counted}, {_duration(elapsed)}"
        if 0 < done < total:
            line += f", ~{_duration(elapsed * (total - done) / done)} left"
        return line


def _duration(seconds: float) -> str:
    """``4 s``, ``2 min 05 s``, ``1 h 03 min``."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
