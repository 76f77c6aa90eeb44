"""The host tier's copy engine under the connector: rows between the connector's row buffer
(radixkv's device tier) and a host buffer, both numpy arrays in the scheduler's process.

A batch's bytes move at the first :meth:`~RowCopyEngine.poll` after it is submitted, with
one exception. The scheduler side commits a step's pages before the worker writes their
rows, in that very step. So a backup whose source rows the current step still has to write
(:meth:`~RowCopyEngine.unwritten`) waits until the step has run (:meth:`~RowCopyEngine.
step_ran`). A wait for such a backup inside the step's planning gives up after a few polls
(the host tier's poll-counting clock, :func:`poll_clock`), and the cache treats the rows as
having no room then.

Negative control (tests only): ``negative_control=True`` makes every load-back write the
batch's first source row into every destination row.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from radixkv.host import Completion, Copy, CopyEngine, Direction

__all__ = ["RowCopyEngine", "poll_clock"]


def poll_clock() -> Callable[[], float]:
    """A clock that advances one second per reading: with ``HostTier(clock=poll_clock(),
    wait_timeout_s=N)`` a wait gives up after about N polls, whatever the machine's speed
    (every copy this engine can make completes at the first poll)."""
    ticks = itertools.count()
    return lambda: float(next(ticks))


class RowCopyEngine(CopyEngine):
    """Copies FULL rows between ``device`` (the row buffer, attached once the worker has
    made it) and a host buffer of ``host_rows`` rows of ``row_shape``."""

    def __init__(self, host_rows: int, row_shape: tuple[int, ...], dtype: npt.DTypeLike, *,
                 negative_control: bool = False) -> None:
        self.host = np.zeros((host_rows, *row_shape), dtype=dtype)
        self.device: npt.NDArray[np.generic] | None = None
        self._negative_control = negative_control
        self._ready: list[tuple[int, Sequence[Copy]]] = []
        self._held: list[tuple[int, Sequence[Copy]]] = []
        self._unwritten = np.zeros(0, dtype=np.int64)
        self._tickets = 0
        self.copied_rows = 0
        """Rows moved so far, both directions."""

    def attach(self, device: npt.NDArray[np.generic]) -> None:
        """The row buffer (rows x row shape, the host's dtype). Raises ``ValueError`` for
        one of another row shape or dtype."""
        if device.shape[1:] != self.host.shape[1:] or device.dtype != self.host.dtype:
            raise ValueError(f"radixkv: a row buffer of {device.shape[1:]} {device.dtype} "
                             f"for host rows of {self.host.shape[1:]} {self.host.dtype}")
        self.device = device

    def host_buffer(self, component: str) -> npt.NDArray[np.generic] | None:
        return self.host if component == "full" else None

    def unwritten(self, rows: npt.NDArray[np.int64]) -> None:
        """Rows the worker writes in the step being planned: backups from them wait."""
        self._unwritten = np.union1d(self._unwritten, rows)

    def step_ran(self) -> None:
        """The planned step has run: its rows are written, held backups may move."""
        self._unwritten = self._unwritten[:0]
        self._ready.extend(self._held)
        self._held.clear()

    def submit(self, copies: Sequence[Copy]) -> int:
        self._tickets += 1
        reads_unwritten = any(
            copy.direction is Direction.TO_HOST
            and np.isin(copy.source, self._unwritten).any() for copy in copies)
        (self._held if reads_unwritten else self._ready).append((self._tickets, copies))
        return self._tickets

    def poll(self) -> list[Completion]:
        done, self._ready = self._ready, []
        return [Completion(ticket, self._move(copies)) for ticket, copies in done]

    def _move(self, copies: Sequence[Copy]) -> bool:
        if self.device is None:
            return False  # nothing to copy from or to yet: the batch fails, nothing is lost
        for copy in copies:
            if copy.component != "full":
                return False
            if copy.direction is Direction.TO_HOST:
                self.host[copy.destination] = self.device[copy.source]
            elif self._negative_control and len(copy.source):
                self.device[copy.destination] = self.host[copy.source[:1]]
            else:
                self.device[copy.destination] = self.host[copy.source]
            self.copied_rows += len(copy.source)
        return True
