"""The host tier's state machine (:mod:`tests.host.test_host_stateful`: admit with and
without load-back, extend, commit, finish, abort, evict, poll, wait, reset, the
caller-held path) with a storage tier on an adversarial store
(:class:`.adversarial_store.AdversarialStore`: a real FileStorage whose calls, drawn from
a seed, raise, stall, answer garbage, hand back damaged or other keys' objects, store
flipped bytes or lie about what they stored), plus prefetch, time passing (the end of a
retry window) and settling the store's I/O.

Each run draws the store's seed, the wait policy and the prefetch threshold; the store's
calls run on the scheduler's thread as they are made (``StorageTier(io_thread=False)``) and
the tier's clock stands still (the store never blocks in real time, its stalls move only the
store's clock), so no run depends on the machine's speed: not what it asserts, and not which
steps hypothesis draws (an I/O thread made them depend on how far its reads had got, and
hypothesis refused the runs as inconsistent data generation). After every step:
``check_invariants()``, no slot of either tier leaked or owned twice (an L3 prefetch's
reserved host slots included), the content oracle (:class:`tests.host.kv_model.KVModel`:
every row of every value the tree holds, on either tier, L3 restores included, and every row
a ready lease reads as cached, holds the value of its namespace and prefix), and no store
call came within a retry window after a stall; every admit met at most one stall. Whenever
the I/O has settled (a reset, a settle, the end): every fault the store played was counted,
by kind. The negative control shows the oracle catches a store that serves another page
under a valid frame.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule, run_state_machine_as_test

from radixkv import CacheConfig, PrefixCache, StorageLayout, StorageTier
from radixkv.cache import Lease, LeaseState
from radixkv.errors import OutOfSlotsError
from radixkv.storage import FAULTS, WAIT_POLICIES

from ..host.kv_model import KVModel
from ..host.test_host_stateful import NAMESPACES, HostTierMachine
from .adversarial_store import AdversarialStore, LockedClock, LyingStore
from .stalled import ManualClock

TIMEOUT = 1.0
"""What a stall costs on the store's clock (its client's timeout)."""
WINDOW = 2.0
"""The store's retry_after_s."""
ROWS = 256
"""Rows of every device and host buffer (more than any pool of the machine has slots)."""


class AdversarialStoreMachine(HostTierMachine):
    """See the module docstring."""

    STORE: type[AdversarialStore] = AdversarialStore

    def built(self, config: CacheConfig, data: st.DataObject) -> tuple[PrefixCache, KVModel]:
        self.served: list[tuple[list[int], Any]] = []
        """Prompts of two pages or more finished lately, with their namespaces."""
        self.root = Path(tempfile.mkdtemp(prefix="radixkv-adversarial-store-"))
        self.clock = LockedClock()
        self.seed = data.draw(st.integers(0, 2**16), label="store seed")
        self.buffers = []
        for name in config.names:
            pair = (np.full(ROWS, -1, np.int64), np.full(ROWS, -1, np.int64))
            self.engine.register(name, "device", pair[0])
            self.engine.register(name, "host", pair[1])
            self.buffers.append(pair)
        page = config.page_size
        tier = StorageTier(
            layouts=tuple(StorageLayout(model="adversarial", dtype="int64", page_size=page,
                                        component=name, layers=(0, 1))
                          for name in config.names),
            prefetch_threshold=data.draw(st.sampled_from((0, page, 2 * page)), label="threshold"),
            wait_policy=data.draw(st.sampled_from(WAIT_POLICIES), label="wait policy"),
            clock=ManualClock(), io_thread=False)
        self.config = replace(config, storage=tier)
        return self.opened()

    def opened(self) -> tuple[PrefixCache, KVModel]:
        """A cache of :attr:`config` on a new client of the store's directory."""
        self.seed += 1
        self.store = self.STORE(self.root, self.seed, self.clock, TIMEOUT, WINDOW)
        cache = PrefixCache(self.config, self.engine, storage=self.store)
        return cache, KVModel(cache, self.engine, self.buffers)

    def attempt(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """Run ``call`` (an admit, extend or allocation); an OutOfSlotsError is an answer
        (the invariants audit the cache: an admit's L3 restore stays, as documented). An
        admit meets at most one stall of the store."""
        stalls = self.store.stalls
        try:
            return call(*args, **kwargs)
        except OutOfSlotsError as error:
            return error
        finally:
            assert self.store.stalls - stalls <= 1, "an admit met two stalls of the store"

    # ------------------------------------------------------------------ more rules

    @rule(data=st.data(), space=st.sampled_from(NAMESPACES))
    def prefetch(self, data: st.DataObject, space: Any) -> None:
        self.cache.prefetch(self.tokens(data), space)

    def finish_lease(self, lease: Lease) -> None:
        if lease.num_tokens >= 2 * self.page:
            self.served.append((lease.tokens.tolist(), lease.namespace))
            del self.served[:-12]
        super().finish_lease(lease)

    @precondition(lambda self: bool(self.served))
    @rule(data=st.data(), first=st.booleans())
    def restart_and_reload(self, data: st.DataObject, first: bool) -> None:
        """A prompt served lately is served twice more (the selective write policy backs
        up what was hit twice), the device tier is demoted to the host (under write_back,
        that backs it up), and the engine restarts: its cache closes (under write_back,
        writing what its host holds to L3 first) and a new one opens on the same store.
        Then it serves that prompt with load-back (``first``: once a prefetch of it
        completed): what it reuses only L3 can hold now, through whatever the store
        does."""
        tokens, space = data.draw(st.sampled_from(self.served), label="prompt")
        for lease in self.leases:
            self.cache.abort(lease)
        self.leases = []
        for _ in range(2):
            self.serve_prompt(tokens, space)
        self.changed(self.cache.wait())
        self.cache.evict(self.cache.pool.capacity)
        self.changed(self.cache.wait())
        self.settle()
        self.cache.close()
        self.every_fault_counted()
        self.cache.check_invariants()
        self.cache, self.model = self.opened()
        self.computed = {}  # lease ids start again in the new cache
        if first:  # the request arrives: prefetch; it is scheduled once that is done
            self.cache.prefetch(tokens, space)
            self.changed(self.cache.wait())
        self.serve_prompt(tokens, space)

    def serve_prompt(self, tokens: list[int], space: Any) -> None:
        """Admit ``tokens`` with load-back, wait for it, compute, finish."""
        lease = self.attempt(self.cache.admit, tokens, space, load_back=True)
        if isinstance(lease, OutOfSlotsError):
            return
        self.leases.append(lease)
        if lease.ready:
            self.became_ready(lease)
        else:
            self.changed(self.cache.wait(lease))
        if lease.state is LeaseState.ACTIVE:
            self.finish_lease(lease)

    @rule()
    def time_passes(self) -> None:
        """A retry window ends: the backend may call the store again."""
        self.clock.advance(WINDOW)

    @rule()
    def settle(self) -> None:
        """Wait for the store's I/O: prefetches dropped, writes landed."""
        assert self.cache.storage is not None
        self.cache.storage.settle()
        self.every_fault_counted()

    @rule()
    def reset(self) -> None:
        super().reset()
        self.every_fault_counted()

    def every_fault_counted(self) -> None:
        """With the I/O settled: the backend counted every fault the store played."""
        store = self.store
        counted = store.stats().faults
        for kind in FAULTS:
            if kind != "unavailable":
                assert counted[kind] == store.expected[kind], (kind, counted, store.expected)
        assert store.stalls or not counted["unavailable"]

    @invariant()
    def one_stall_per_retry_window(self) -> None:
        if hasattr(self, "store"):
            assert self.store.early == 0, "the store was called within a retry window"

    def teardown(self) -> None:
        if not hasattr(self, "store"):
            return
        try:
            for lease in self.leases:
                self.cache.abort(lease)
            self.cache.close()
            self.every_fault_counted()
            self.cache.check_invariants()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


SETTINGS = settings(derandomize=True, deadline=None, max_examples=60,
                    stateful_step_count=30, database=None)

MACHINES: dict[str, type[AdversarialStoreMachine]] = {}
for _name, _components in (("Full", ("full",)), ("FullSwaMamba", ("full", "swa", "mamba"))):
    _machine = type(f"{_name}AdversarialStoreMachine", (AdversarialStoreMachine,),
                    {"COMPONENTS": _components})
    _machine.TestCase.settings = SETTINGS
    MACHINES[_name] = _machine

TestFullAdversarialStore = MACHINES["Full"].TestCase
TestFullSwaMambaAdversarialStore = MACHINES["FullSwaMamba"].TestCase


# ---------------------------------------------------------------------- the oracle can fail


def test_the_oracle_catches_a_store_that_serves_another_page_under_a_valid_frame() -> None:
    machine = type("LyingStoreMachine", (AdversarialStoreMachine,), {"STORE": LyingStore})
    caught(machine, r"reads wrong|holds wrong")


class _NoWindowStore(AdversarialStore):
    """A backend that calls the store again right after a stall (no retry window)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._retry_after_s = 0.0


def test_the_machine_catches_a_backend_that_calls_a_stalled_store_again_at_once() -> None:
    machine = type("NoWindowMachine", (AdversarialStoreMachine,), {"STORE": _NoWindowStore})
    caught(machine, r"within a retry window|two stalls")


def caught(machine: type[AdversarialStoreMachine], pattern: str) -> None:
    """The machine finds a failure matching ``pattern`` (the generate phase alone: the
    first failure found is reported as it is)."""
    quick = settings(SETTINGS, phases=[Phase.generate])
    try:
        run_state_machine_as_test(machine, settings=quick)
    except AssertionError as error:
        assert re.search(pattern, str(error)), str(error)[:500]
    else:
        pytest.fail(f"{machine.__name__} found nothing")
