"""The copy engine interface: how the cache asks the engine to move KV between tiers.

The cache never copies bytes itself. It submits a batch of copies, gets a ticket, and is
told later (by :meth:`CopyEngine.poll` or :meth:`CopyEngine.wait`) whether the batch
completed; until then the nodes involved stay locked, so no slot a copy reads or writes is
freed or reused. The cache trusts none of the engine's answers: what it raises or returns
outside this contract is counted as a fault and handled (:mod:`.engine_calls`). An engine
implements the two abstract methods over its own buffers (one
per component and tier, first axis = slot); :class:`~radixkv.host.NumpyCopyEngine`
ships for tests, the reference model and the simulator.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np


class Direction(enum.Enum):
    TO_HOST = "device_to_host"
    """A backup: device slots are read, host slots written."""
    TO_DEVICE = "host_to_device"
    """A load-back: host slots are read, device slots written."""


@dataclass(frozen=True, slots=True)
class Copy:
    """Copy the rows ``source`` of ``component``'s buffer on the source tier into the rows
    ``destination`` (same length) of its buffer on the other tier."""

    component: str
    direction: Direction
    source: np.ndarray
    destination: np.ndarray


@dataclass(frozen=True, slots=True)
class Completion:
    """A batch that finished: ``ok`` is False when any copy of it failed (its destination
    then holds nothing usable). Only the bool ``True`` counts as success."""

    ticket: int
    ok: bool


class CopyEngine(ABC):
    """What a serving engine implements to move KV between device and host memory."""

    @abstractmethod
    def submit(self, copies: Sequence[Copy]) -> int:
        """Start the batch ``copies`` (asynchronously, or at once) and return its ticket, an
        int (not a bool) that no batch in flight has. Must not raise once the batch is
        accepted: report a failure through the batch's :class:`Completion` instead. A
        raise, or an answer that is no such ticket, makes the cache treat the batch as
        never submitted (it frees the destination slots at once: the engine must not
        write them later)."""

    @abstractmethod
    def poll(self) -> list[Completion]:
        """Batches completed since the last call (each reported once), without blocking."""

    def host_buffer(self, component: str) -> np.ndarray | None:
        """``component``'s host buffer as a numpy array whose first axis is the host slot,
        or ``None`` (the default) if this engine exposes none. A storage tier reads and
        writes L3 pages there, so a cache with one needs it for every component."""
        return None

    def wait(self, tickets: Collection[int]) -> list[Completion]:
        """Block until every batch in ``tickets`` completed; return every completion seen
        meanwhile (others' too). The default polls in a loop; engines with streams or
        events override it with a real wait, which should return within a bound of its
        own (the cache calls it again until ``HostTier.wait_timeout_s`` ran out). A cache
        never calls this default: it polls itself, under that bound."""
        pending, seen = set(tickets), []
        while pending:
            done = self.poll()
            seen.extend(done)
            pending.difference_update(c.ticket for c in done)
        return seen
