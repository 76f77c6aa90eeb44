"""The host tier's state machine (:mod:`.test_host_stateful`: admit with and without
load-back, extend, commit, finish, abort, evict, poll, wait, reset, the caller-held path)
driven through an adversarial copy engine.

:class:`AdversarialEngine` is a :class:`NumpyCopyEngine` (bytes really move between numpy
buffers, batches complete out of order and sometimes fail) that, drawn from its seed, also
raises in ``submit``, ``poll`` or ``wait``; answers tickets that are no int or that a batch
in flight has; answers a poll with something that is no list; mixes garbage into a poll's
list (``None``, ints, completions of unknown or bool tickets); reports tickets twice, in
the same answer or long after; and reports ``ok`` values such as ``"no"``, ``1``, ``None``
or ``numpy.True_``. It never loses a real completion (it raises before it polls), so every
copy is reported in the end, and a batch it refuses it never carries out. It draws from
its own random stream at every call, so how many calls a wait makes must not depend on the
machine's speed: the machine's waits time out on a clock of polls
(:attr:`.test_host_stateful.HostTierMachine.WAIT_POLLS`), never on wall-clock seconds.

After every step: ``check_invariants()``, no slot of either tier leaked or owned twice, the
content oracle (:class:`.kv_model.KVModel`: every row of every value the tree holds, on
either tier, and every row a ready lease reads as cached, holds the value written for its
namespace and prefix, so a row served without a real copy behind it shows), and every fault
the engine injected was counted once in ``stats().host.copy_faults``. The negative control
shows the oracle fails when a load-back's bytes are not copied but the batch is
acknowledged ok.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule, run_state_machine_as_test

from radixkv.host import Completion, Copy, Direction, NumpyCopyConfig, NumpyCopyEngine

from .test_host_stateful import MAX_LEASES, NAMESPACES, HostTierMachine

BAD_TICKETS: tuple[Any, ...] = (True, False, 1.0, "3", None, -0.5)
BAD_OKS: tuple[Any, ...] = ("no", "yes", 1, 0, None, np.True_, 1.0)
NOT_LISTS: tuple[Any, ...] = (None, 5, "done", {1: True})


class AdversarialEngine(NumpyCopyEngine):
    """See the module docstring. ``injected`` counts the faults it made, each of which the
    cache must count once."""

    def __init__(self, config: NumpyCopyConfig | None = None) -> None:
        super().__init__(config)
        seed = self.config.seed
        self.chaos = random.Random(None if seed is None else seed + 1)
        self.rate = self.chaos.choice((0.05, 0.15, 0.3))
        """The chance of each kind of fault at each call."""
        self.injected = 0
        self.reported: list[int] = []
        """Tickets reported by earlier calls (some are reported again, long after: never
        in the answer that reports them, where the lie could come first)."""
        self.reporting: list[int] = []
        """Tickets the current call reports."""

    def _roll(self) -> bool:
        return self.chaos.random() < self.rate

    def submit(self, copies: Sequence[Copy]) -> Any:
        in_flight = [batch.ticket for batch in self._pending]
        if in_flight and self.chaos.random() < 0.5:  # (rare otherwise: few are in flight)
            self.injected += 1
            return self.chaos.choice(in_flight)  # a ticket a batch in flight has
        if self._roll():
            self.injected += 1
            if self.chaos.random() < 0.5:
                raise RuntimeError("submit: the engine broke")
            return self.chaos.choice(BAD_TICKETS)
        return super().submit(copies)

    def _next_call(self) -> None:
        self.reported += self.reporting
        self.reporting = []

    def poll(self) -> Any:
        self._next_call()
        if self._roll():  # before the real poll: no completion is lost
            self.injected += 1
            if self.chaos.random() < 0.5:
                raise RuntimeError("poll: the engine broke")
            return self.chaos.choice(NOT_LISTS)
        return self._listed()

    def _listed(self) -> list[Any]:
        """A poll's answer as a list: the real completions (some corrupted, some twice) and
        garbage, shuffled."""
        answer: list[Any] = []
        for completion in super().poll():
            completion = self._corrupted(completion)
            answer.append(completion)
            if self._roll():  # the same report twice in one answer
                self.injected += 1
                answer.append(completion)
            self.reporting.append(completion.ticket)
        answer.extend(self._garbage())
        self.chaos.shuffle(answer)
        return answer

    def _corrupted(self, completion: Completion) -> Completion:
        if not self._roll():
            return completion
        self.injected += 1
        return Completion(completion.ticket, self.chaos.choice(BAD_OKS))

    def _garbage(self) -> list[Any]:
        garbage: list[Any] = []
        while self._roll():
            self.injected += 1
            kind = self.chaos.randrange(4)
            if kind == 0 and self.reported:  # reported again, long after
                garbage.append(Completion(self.chaos.choice(self.reported), True))
            elif kind == 1:
                garbage.append(Completion(10**9 + self.chaos.randrange(9), True))
            elif kind == 2:
                garbage.append(Completion(True, True))
            else:
                garbage.append(self.chaos.choice((None, 3, "x", (1, True))))
        return garbage


class WaitingAdversary(AdversarialEngine):
    """The same, with a wait of its own (the cache then calls it, not its own polls) that
    sometimes raises (before it polls: nothing lost) or returns before every ticket came."""

    def wait(self, tickets: Collection[int]) -> Any:
        self._next_call()
        if self._roll():
            self.injected += 1
            raise RuntimeError("wait: the engine broke")
        seen: list[Any] = []
        for _ in range(self.chaos.randrange(1, 4)):
            seen.extend(self._listed())  # never raising midway: that would lose completions
        return seen


class AdversarialMachine(HostTierMachine):
    """The host tier's machine with an adversarial engine; see the module docstring."""

    ENGINE: type[NumpyCopyEngine] = AdversarialEngine

    @precondition(lambda self: len(self.leases) < MAX_LEASES and bool(self.history))
    @rule(data=st.data(), space=st.sampled_from(NAMESPACES))
    def demote_all_and_reload(self, data: st.DataObject, space: Any) -> None:
        """Let the backups land, demote the whole device tier, then serve an earlier
        prompt with load-back: the host must serve it, through the engine."""
        self.changed(self.cache.wait())
        self.cache.evict(self.cache.pool.capacity)
        self.changed(self.cache.poll())
        self.serve(data, True, space)

    @invariant()
    def every_fault_counted(self) -> None:
        if not hasattr(self, "cache"):
            return
        engine = self.engine
        assert isinstance(engine, AdversarialEngine)
        assert self.cache.stats().host.copy_faults == engine.injected  # type: ignore[union-attr]


SETTINGS = settings(derandomize=True, deadline=None, max_examples=150,
                    stateful_step_count=50, database=None)

MACHINES: dict[str, type[AdversarialMachine]] = {}
for _name, _components, _engine in (
        ("Full", ("full",), AdversarialEngine),
        ("FullWaiting", ("full",), WaitingAdversary),
        ("FullSwaMamba", ("full", "swa", "mamba"), AdversarialEngine),
        ("FullSwaMambaWaiting", ("full", "swa", "mamba"), WaitingAdversary)):
    _machine = type(f"{_name}AdversarialMachine", (AdversarialMachine,),
                    {"COMPONENTS": _components, "ENGINE": _engine})
    _machine.TestCase.settings = SETTINGS
    MACHINES[_name] = _machine

TestFullAdversarial = MACHINES["Full"].TestCase
TestFullWaitingAdversarial = MACHINES["FullWaiting"].TestCase
TestFullSwaMambaAdversarial = MACHINES["FullSwaMamba"].TestCase
TestFullSwaMambaWaitingAdversarial = MACHINES["FullSwaMambaWaiting"].TestCase


# ---------------------------------------------------------------------- the oracle can fail


class _SkipsLoadBacks(AdversarialEngine):
    """Acknowledges every load-back ok without copying its bytes."""

    def _move(self, copies: list[Copy]) -> None:
        super()._move([c for c in copies if c.direction is not Direction.TO_DEVICE])


def test_the_oracle_catches_a_load_back_acknowledged_ok_without_its_copy() -> None:
    machine = type("SkipsLoadBacksMachine", (AdversarialMachine,), {"ENGINE": _SkipsLoadBacks})
    quick = settings(SETTINGS, phases=[Phase.generate])
    with pytest.raises(AssertionError, match=r"reads wrong|holds wrong"):
        run_state_machine_as_test(machine, settings=quick)
