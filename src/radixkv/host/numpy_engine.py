"""NumpyCopyEngine: a copy engine over numpy arrays, for tests, the reference model and the
simulator, with delayed, out-of-order and failing completions on request."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.tiers import TIER_NAMES
from ..errors import ConfigError, InvalidArgumentError
from .copy_engine import Completion, Copy, CopyEngine, Direction


@dataclass(frozen=True)
class NumpyCopyConfig:
    """``delay_polls``: a batch completes on the ``delay_polls + 1``-th :meth:`poll` after
    its submission (0: on the next one); with ``seed``, each batch draws its own delay in
    ``[0, delay_polls]``, so batches complete out of order. ``failure_rate``: the share of
    batches (drawn with ``seed``) that fail: their bytes are not copied."""

    delay_polls: int = 0
    seed: int | None = None
    failure_rate: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.delay_polls, bool) or not isinstance(self.delay_polls, int) \
                or self.delay_polls < 0:
            raise ConfigError(f"delay_polls must be an int >= 0, got {self.delay_polls!r}")
        if not 0.0 <= self.failure_rate <= 1.0:
            raise ConfigError(f"failure_rate must be in [0, 1], got {self.failure_rate!r}")


class _Batch:
    __slots__ = ("copies", "fails", "polls_left", "ticket")

    def __init__(self, ticket: int, copies: Sequence[Copy], polls_left: int, fails: bool):
        self.ticket, self.copies = ticket, list(copies)
        self.polls_left, self.fails = polls_left, fails


class NumpyCopyEngine(CopyEngine):
    """Copies rows between registered numpy buffers: ``register(component, tier, array)``
    gives one array per component and tier (``"device"`` / ``"host"``), first axis = slot.
    A component with no arrays registered is bookkeeping only (its copies complete without
    moving bytes: the simulator's case). A batch's bytes move when it completes, never
    before, so reading a destination before the acknowledgement reads stale rows.
    :meth:`fail` makes a submitted batch fail. Single-threaded, like the cache."""

    def __init__(self, config: NumpyCopyConfig | None = None) -> None:
        self.config = NumpyCopyConfig() if config is None else config
        self._arrays: dict[tuple[str, str], np.ndarray] = {}
        self._pending: list[_Batch] = []
        self._tickets = 0
        self._random = random.Random(self.config.seed)
        self.submitted = 0
        """Batches submitted so far."""
        self.copied_rows = 0
        """Rows moved so far."""

    def register(self, component: str, tier: str, array: np.ndarray) -> None:
        """Use ``array`` as ``component``'s buffer on ``tier`` (rows = slots)."""
        if tier not in TIER_NAMES:
            raise InvalidArgumentError(f"tier must be one of {TIER_NAMES}, got {tier!r}")
        if not isinstance(array, np.ndarray) or array.ndim < 1:
            raise InvalidArgumentError("a KV buffer is a numpy array with a slot axis first")
        self._arrays[(component, tier)] = array

    def buffer(self, component: str, tier: str) -> np.ndarray | None:
        """The array registered for ``component`` on ``tier``, if any."""
        return self._arrays.get((component, tier))

    def host_buffer(self, component: str) -> np.ndarray | None:
        return self._arrays.get((component, "host"))

    def submit(self, copies: Sequence[Copy]) -> int:
        for copy in copies:
            if len(copy.source) != len(copy.destination):
                raise InvalidArgumentError(
                    f"{copy.component}: {len(copy.source)} source rows for "
                    f"{len(copy.destination)} destination rows")
        self._tickets += 1
        self.submitted += 1
        delay = self.config.delay_polls
        if self.config.seed is not None:
            delay = self._random.randint(0, delay)
        fails = self.config.failure_rate > 0 and \
            self._random.random() < self.config.failure_rate
        self._pending.append(_Batch(self._tickets, copies, delay, fails))
        return self._tickets

    def fail(self, ticket: int) -> None:
        """Make the pending batch ``ticket`` fail when it completes."""
        for batch in self._pending:
            if batch.ticket == ticket:
                batch.fails = True
                return
        raise InvalidArgumentError(f"no pending batch {ticket}")

    def poll(self) -> list[Completion]:
        done, waiting = [], []
        for batch in self._pending:
            if batch.polls_left:
                batch.polls_left -= 1
                waiting.append(batch)
                continue
            if not batch.fails:
                self._move(batch.copies)
            done.append(Completion(batch.ticket, not batch.fails))
        self._pending = waiting
        return done

    @property
    def in_flight(self) -> int:
        """Batches submitted and not yet reported."""
        return len(self._pending)

    def _move(self, copies: list[Copy]) -> None:
        for copy in copies:
            source, destination = ("device", "host") if copy.direction is Direction.TO_HOST \
                else ("host", "device")
            src = self._arrays.get((copy.component, source))
            dst = self._arrays.get((copy.component, destination))
            if src is None or dst is None:
                continue
            dst[copy.destination] = src[copy.source]
            self.copied_rows += len(copy.source)
