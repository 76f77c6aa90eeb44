"""A one-line progress bar on stderr (only when it is a terminal, unless forced)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """``update(done, total)`` redraws at most ten times a second; ``close()`` ends the
    line. ``prefix`` names what runs (e.g. ``run 2/6``)."""

    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None,
                 width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.width, self.prefix = width, ""
        self._last = 0.0
        self._drawn = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        filled = self.width * done // max(total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.prefix} [{bar}] {done}/{total} requests")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
