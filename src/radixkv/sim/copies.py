"""SimCopyEngine: a copy engine whose copies take simulated time.

The simulator moves no bytes; what matters is when a copy is acknowledged. Each direction
(backups to the host, load-backs to the device) is one stream, as a GPU's copy engines
are: a batch starts when the stream is free (or at submission, if later) and takes
``rows / bandwidth`` seconds, ``rows`` being the slots it copies over every component (a
MAMBA state counts as one row: a simplification, see docs/simulator.md), ``bandwidth`` the
cost model's ``host_bandwidth`` (``None``: copies are instantaneous). A batch is reported
by the first :meth:`poll` at or after its completion time on the engine's clock.

A synchronous :meth:`wait` (the cache waits when eviction needs a backup to land, or when
only in-flight backups' locks keep it from making room) blocks the scheduler: the batches
complete at once, and :attr:`blocked_until` tells the engine how far its clock must jump.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Sequence

from ..host import Completion, Copy, CopyEngine, Direction


class SimCopyEngine(CopyEngine):
    """See the module docstring. ``clock``: the engine's simulated time, read at each
    submit and poll."""

    def __init__(self, bandwidth: float | None, clock: Callable[[], float]) -> None:
        if bandwidth is not None and not bandwidth > 0:
            raise ValueError(f"host bandwidth must be > 0 tokens/s, got {bandwidth!r}")
        self.bandwidth, self.clock = bandwidth, clock
        self._free_at = {Direction.TO_HOST: 0.0, Direction.TO_DEVICE: 0.0}
        self._pending: list[tuple[float, int]] = []  # (completion time, ticket)
        self._tickets = 0
        self.blocked_until = 0.0
        """The end of the latest synchronous wait (simulated seconds)."""
        self.rows = {Direction.TO_HOST: 0, Direction.TO_DEVICE: 0}
        """Rows copied (submitted) each way."""
        self.busy = {Direction.TO_HOST: 0.0, Direction.TO_DEVICE: 0.0}
        """Seconds each stream spent copying."""
        self.blocked = 0.0
        """Seconds the scheduler spent blocked in :meth:`wait`."""

    def submit(self, copies: Sequence[Copy]) -> int:
        rows = sum(len(copy.source) for copy in copies)
        direction = copies[0].direction if copies else Direction.TO_HOST
        start = max(self._now(), self._free_at[direction])
        seconds = 0.0 if self.bandwidth is None else rows / self.bandwidth
        self._free_at[direction] = start + seconds
        self.rows[direction] += rows
        self.busy[direction] += seconds
        self._tickets += 1
        heapq.heappush(self._pending, (start + seconds, self._tickets))
        return self._tickets

    def poll(self) -> list[Completion]:
        return self._until(self._now())

    def wait(self, tickets: Collection[int]) -> list[Completion]:
        wanted = set(tickets)
        ends = [end for end, ticket in self._pending if ticket in wanted]
        if not ends:
            return self.poll()
        now = self._now()
        end = max(ends)
        if end > now:
            self.blocked += end - now
            self.blocked_until = end
        return self._until(end)

    def next_completion(self) -> float | None:
        """When the earliest batch in flight completes; ``None`` when none is."""
        return self._pending[0][0] if self._pending else None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def _now(self) -> float:
        return max(self.clock(), self.blocked_until)

    def _until(self, time: float) -> list[Completion]:
        done = []
        pending = self._pending
        while pending and pending[0][0] <= time:
            done.append(Completion(heapq.heappop(pending)[1], True))
        return done
