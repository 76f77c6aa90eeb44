"""EngineCalls: every call the host tier makes to the copy engine, and what it accepts of
the answers.

The copy engine is the serving engine's code, so nothing it raises or returns is trusted:
the host tier changes its state only after a call returned a valid answer. Each fault is
counted (``TierCounters.copy_faults``) and handled so that the cache stays consistent and
serves nothing that was not copied:

- ``submit`` raises, or answers a ticket that is no int (``bool`` included): the batch is
  refused, nothing was submitted as far as the cache knows;
- ``poll`` or ``wait`` raises, or answers something that is no list: nothing is reported
  (what the cache had received before stays received);
- an item that is no :class:`Completion`, a ticket no copy in flight has, a ticket already
  reported: the item is dropped;
- an ``ok`` that is not the bool ``True`` or ``False``: the copy failed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import numpy as np

from ..core.copy_plans import Planned
from ..core.node import Node
from ..core.tiers import DEVICE, HOST
from ..core.tree import TreeCore
from ..errors import CopyEngineError
from .copy_engine import Completion, Copy, CopyEngine, Direction
from .counters import TierCounters


class CopyRefused(Exception):
    """The engine refused a batch (counted as a fault): raised by the host tier to its own
    caller inside the cache, which makes the copy's purpose fail cleanly; never escapes."""


def as_ticket(value: object) -> int | None:
    """``value`` as a ticket (a Python or numpy int, not a bool); ``None`` if it is none."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return None
    return int(value)


class EngineCalls:
    """The guarded calls to ``engine`` for the copies in flight ``records`` (ticket ->
    record, the host tier's); faults counted in ``counters``; timeouts measured on ``clock``
    (``HostTier.clock``)."""

    def __init__(self, engine: CopyEngine, counters: TierCounters,
                 records: Mapping[int, object], clock: Callable[[], float]) -> None:
        self.engine, self.counters, self.records = engine, counters, records
        self.clock = clock
        self.received: dict[int, Completion] = {}
        """Completions received and not applied yet (a wait keeps others' for a poll), in
        the order they came."""
        self.polls_itself = type(engine).wait is CopyEngine.wait
        """Whether the engine keeps the default wait, a loop of polls: the controller then
        polls itself, so that its bound holds and a poll that raises loses nothing."""
        self.last_fault: str | None = None
        """What the latest fault was, for a person debugging an engine."""

    def fault(self, what: str) -> None:
        self.counters.copy_faults += 1
        self.last_fault = what

    def submit(self, copies: list[Copy]) -> int | None:
        """Submit ``copies``; their ticket, or ``None`` (counted) when the engine raised or
        answered no int."""
        try:
            answer = self.engine.submit(copies)
        except Exception as error:  # the engine's code: anything may come out of it
            self.fault(f"submit raised {type(error).__name__}")
            return None
        ticket = as_ticket(answer)
        if ticket is None:
            self.fault(f"submit answered a {type(answer).__name__}, not an int ticket")
        return ticket

    def take_all(self) -> list[Completion]:
        """Poll once; every completion received and not taken yet (a poll that raised
        loses none of those)."""
        self._collect(())
        done, self.received = list(self.received.values()), {}
        return done

    def take(self, wanted: set[int], timeout: float) -> list[Completion]:
        """Wait until every ticket of ``wanted`` (copies in flight) was reported; their
        completions, the others kept. Raises :class:`CopyEngineError` (nothing taken)
        when they are not all reported within ``timeout`` seconds of :attr:`clock`."""
        clock = self.clock
        deadline = clock() + timeout
        missing = wanted.difference(self.received)
        while missing:
            if clock() > deadline:
                raise CopyEngineError(
                    f"copies {sorted(missing)} not completed within {timeout:g} s "
                    f"(last copy engine fault: {self.last_fault})")
            self._collect(missing)
            missing = wanted.difference(self.received)
        mine = [c for ticket, c in self.received.items() if ticket in wanted]
        for completion in mine:
            del self.received[completion.ticket]
        return mine

    def _collect(self, missing: Collection[int]) -> None:
        """One round: a poll (``missing`` empty, or an engine that keeps the default wait)
        or the engine's own wait; the valid completions join :attr:`received`."""
        waits = bool(missing) and not self.polls_itself
        try:
            answer = self.engine.wait(missing) if waits else self.engine.poll()
        except Exception as error:  # the engine's code
            self.fault(f"{'wait' if waits else 'poll'} raised {type(error).__name__}")
            return
        self._valid(answer)

    def _valid(self, answer: object) -> None:
        """Receive the completions of ``answer`` that are news: a copy in flight, not
        reported yet, each once; an ``ok`` that is no bool is a failure."""
        if not isinstance(answer, (list, tuple)):
            self.fault(f"the engine answered a {type(answer).__name__}, not a list")
            return
        received, records = self.received, self.records
        for item in answer:
            ticket = as_ticket(item.ticket) if isinstance(item, Completion) else None
            if ticket is None or ticket in received or ticket not in records:
                self.fault(f"the engine reported a {type(item).__name__} that completes no "
                           "copy in flight")
                continue
            ok = item.ok
            if type(ok) is not bool:
                self.fault(f"copy {ticket} reported a {type(ok).__name__} ok: it failed")
                ok = False
            received[ticket] = Completion(ticket, ok)


def plan_batch(tree: TreeCore, planned: Planned, slots: list[np.ndarray | None], tier: int
               ) -> tuple[list[tuple[Node, int, np.ndarray]], list[Copy]]:
    """The batch that copies ``planned``'s values to ``tier`` into ``slots`` (per component,
    the destination slots in plan order), and per node and component the destination value
    to place once the engine took it; pure."""
    count = len(tree.components)
    source = tree.tiers[HOST if tier == DEVICE else DEVICE]
    offsets = [0] * count
    sources: list[list[np.ndarray]] = [[] for _ in range(count)]
    placed = []
    for node, indices in planned:
        for index in indices:
            size = tree.components[index].value_size(node)
            part = slots[index]
            assert part is not None
            placed.append((node, index, part[offsets[index] : offsets[index] + size].copy()))
            offsets[index] += size
            value = source.value(node, index)
            assert value is not None
            sources[index].append(value)
    direction = Direction.TO_HOST if tier == HOST else Direction.TO_DEVICE
    names = [component.name for component in tree.components]
    copies = [Copy(names[i], direction, np.concatenate(sources[i]), part)
              for i, part in enumerate(slots) if part is not None and len(part)]
    return placed, copies
