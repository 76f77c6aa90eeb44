"""Stateful (hypothesis) test of a cache with a host tier.

One machine per component combination (FULL, FULL+SWA, FULL+MAMBA, FULL+SWA+MAMBA); each run
draws the page size, the eviction policy, the write policy, and a seeded NumpyCopyEngine
whose batches complete out of order after up to a few polls and sometimes fail. Small
device and host pools keep eviction, demotion, host eviction and load-back frequent. Rules:
admit (with and without load-back), extend, commit, finish, abort, poll, wait, match, evict,
reset, and the caller-held allocate → insert path. After every step: ``check_invariants()``
(both tiers and the copies in flight), the pool accounting seen from outside
(:func:`.kv_model.check_owners`: no slot leaked or owned twice on either tier), and the KV
bytes (:class:`.kv_model.KVModel`): every value the tree holds, on either tier, holds the
rows of its tokens, and every ready lease reads the right rows for its cached prefix.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from radixkv import Allocation, CacheConfig, PrefixCache
from radixkv.cache import Lease, LeaseState
from radixkv.core.policy import POLICIES
from radixkv.errors import LeaseError, OutOfSlotsError
from radixkv.host import (
    WRITE_POLICIES,
    Copy,
    Direction,
    HostTier,
    NumpyCopyConfig,
    NumpyCopyEngine,
)

from ..audited import assert_refused
from .helpers import PollClock
from .kv_model import KVModel, check_owners

VOCAB = 3
MAX_PROMPT = 16
MAX_LEASES = 4
NAMESPACES: tuple[Any, ...] = (None, (7, "tenant"))


class HostTierMachine(RuleBasedStateMachine):
    """A cache of :attr:`COMPONENTS` with a host tier; see the module docstring."""

    COMPONENTS: tuple[str, ...] = ("full",)
    ENGINE: type[NumpyCopyEngine] = NumpyCopyEngine
    HOST: dict[str, Any] = {}  # noqa: RUF012 (read only)
    """More fields of the host tier's configuration."""
    WAIT_POLLS = 10_000
    """How many rounds of polls a wait makes before it gives up (``wait_timeout_s`` on a
    :class:`.helpers.PollClock`): the machine's runs never depend on the machine's speed."""

    def __init__(self) -> None:
        super().__init__()
        self.leases: list[Lease] = []
        self.computed: dict[int, int] = {}
        """Lease id -> tokens its engine computed so far (only ready leases compute)."""
        self.history: list[list[int]] = []

    @initialize(page=st.sampled_from((1, 2)), policy=st.sampled_from(sorted(POLICIES)),
                write=st.sampled_from(sorted(WRITE_POLICIES)), seed=st.integers(0, 2**16),
                delay=st.integers(0, 3), failures=st.sampled_from((0.0, 0.0, 0.1, 0.3)),
                pages=st.integers(12, 20), host_pages=st.integers(4, 32), data=st.data())
    def setup(self, page: int, policy: str, write: str, seed: int, delay: int,
              failures: float, pages: int, host_pages: int, data: st.DataObject) -> None:
        self.page = page
        self.engine = self.ENGINE(NumpyCopyConfig(delay_polls=delay, seed=seed,
                                                      failure_rate=failures))
        extra: dict[str, Any] = {}
        if "swa" in self.COMPONENTS:
            extra.update(sliding_window=3 * page, swa_capacity=pages * page)
        if "mamba" in self.COMPONENTS:
            extra.update(mamba_track_interval=2 * page, mamba_states=8)
        host = HostTier(capacity=host_pages * page, states=6, write_policy=write,
                        wait_timeout_s=self.WAIT_POLLS, clock=PollClock(), **self.HOST)
        self.cache, self.model = self.built(
            CacheConfig(capacity=pages * page, page_size=page, policy=policy,
                        components=self.COMPONENTS, host=host, **extra), data)
        self.state = next((i for i, c in enumerate(self.cache.tree.components)
                           if not c.per_token), None)
        self.allocations: list[Allocation] = []
        for _ in range(data.draw(st.integers(0, 4), label="warm-up requests")):
            self.serve(data, data.draw(st.booleans()), None)

    # ------------------------------------------------------------------ helpers

    def built(self, config: CacheConfig, data: st.DataObject) -> tuple[PrefixCache, KVModel]:
        """The cache of ``config`` over the machine's engine, and its model (a subclass may
        add to both, drawing from ``data``)."""
        cache = PrefixCache(config, self.engine)
        return cache, KVModel(cache, self.engine)

    def tokens(self, data: st.DataObject) -> list[int]:
        """Mostly an earlier prompt, cut and extended; sometimes fresh."""
        fresh = data.draw(st.lists(st.integers(0, VOCAB), max_size=MAX_PROMPT), label="fresh")
        if self.history and data.draw(st.integers(0, 3), label="reuse") > 0:
            base = data.draw(st.sampled_from(self.history), label="base")
            cut = data.draw(st.integers(0, len(base)), label="cut")
            fresh = base[:cut] + fresh[: data.draw(st.integers(0, 2 * self.page + 1))]
        return fresh[:MAX_PROMPT]

    def remember(self, tokens: list[int]) -> None:
        if tokens and tokens not in self.history:
            self.history = [*self.history[-11:], tokens]

    def ready(self) -> list[Lease]:
        return [lease for lease in self.leases if lease.ready]

    def became_ready(self, lease: Lease) -> None:
        """The lease's copies landed: its cached prefix must read right; it computes."""
        self.model.check_lease(lease)
        self.compute(lease)

    def compute(self, lease: Lease) -> None:
        """Compute what the lease has not computed, and save its MAMBA checkpoints."""
        start = self.computed.get(lease.id, lease.cached_length)
        self.model.compute(lease, start)
        self.computed[lease.id] = lease.num_tokens
        if self.state is None:
            return
        tokens = lease.tokens.tolist()
        for position in lease.checkpoint_hints:
            if position <= lease.tree_owned or position in lease.checkpoints:
                continue
            try:
                slot = self.cache.checkpoint(lease, position)
            except OutOfSlotsError:
                return
            self.model.save_state(self.state, slot, lease.namespace, tokens[:position])

    def changed(self, leases: list[Lease]) -> None:
        """What poll / wait reported: leases now ready, or failed by a load-back."""
        for lease in leases:
            assert lease.ready or lease.state is LeaseState.FAILED, lease
            if lease.state is LeaseState.FAILED:
                assert lease in self.leases
                self.leases.remove(lease)
            elif lease in self.leases:
                self.became_ready(lease)
        assert not any(lease.state is not LeaseState.ACTIVE for lease in self.leases)

    def attempt(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """Run ``call``; on OutOfSlotsError check nothing changed when no copy was in
        flight (waiting for copies may apply acknowledgements first)."""
        quiet = not self.cache.host.records and not self.cache.host.due  # type: ignore[union-attr]
        before = self.cache.snapshot() if quiet else None
        try:
            return call(*args, **kwargs)
        except OutOfSlotsError as error:
            assert before is None or self.cache.snapshot() == before
            return error

    # ------------------------------------------------------------------ rules

    @precondition(lambda self: len(self.leases) < MAX_LEASES)
    @rule(data=st.data(), load_back=st.booleans(), space=st.sampled_from(NAMESPACES))
    def admit(self, data: st.DataObject, load_back: bool, space: Any) -> None:
        tokens = self.tokens(data)
        expected = self.cache.match(tokens, space)
        lease = self.attempt(self.cache.admit, tokens, space, load_back=load_back)
        if isinstance(lease, OutOfSlotsError):
            return
        self.remember(tokens)
        assert lease.cached_length >= expected.length or not load_back
        if not load_back:
            assert lease.cached_length == self.cache.match(tokens, space).length
        self.leases.append(lease)
        if lease.ready:
            self.became_ready(lease)

    @precondition(lambda self: len(self.leases) < MAX_LEASES)
    @rule(data=st.data(), load_back=st.booleans(), space=st.sampled_from(NAMESPACES))
    def serve(self, data: st.DataObject, load_back: bool, space: Any) -> None:
        """A whole request: admit, wait for its load-back (or leave it running), decode a
        little, finish."""
        before = len(self.leases)
        self.admit(data, load_back, space)
        if len(self.leases) == before:
            return
        lease = self.leases[-1]
        if not lease.ready:
            if data.draw(st.booleans(), label="leave it loading?"):
                return
            self.changed(self.cache.wait(lease))
            if lease.state is LeaseState.FAILED:
                return
        if data.draw(st.booleans(), label="decode?"):
            self.extend_lease(lease, data)
        self.finish_lease(lease)

    @precondition(lambda self: len(self.leases) < MAX_LEASES and bool(self.history))
    @rule(data=st.data(), space=st.sampled_from(NAMESPACES))
    def reload(self, data: st.DataObject, space: Any) -> None:
        """Evict much of the device tier (demoting what the host holds), then serve an
        earlier prompt with load-back: most of its reuse must come from the host."""
        self.cache.evict(data.draw(st.integers(0, self.cache.pool.capacity), label="evict"))
        self.changed(self.cache.poll())
        self.serve(data, True, space)

    @precondition(lambda self: any(lease.ready for lease in self.leases))
    @rule(data=st.data())
    def extend(self, data: st.DataObject) -> None:
        self.extend_lease(data.draw(st.sampled_from(self.ready()), label="lease"), data)

    def extend_lease(self, lease: Lease, data: st.DataObject) -> None:
        more = data.draw(st.lists(st.integers(0, VOCAB), min_size=1, max_size=2 * self.page))
        if not isinstance(self.attempt(self.cache.extend, lease, more), OutOfSlotsError):
            self.compute(lease)

    @precondition(lambda self: any(not lease.ready for lease in self.leases))
    @rule(data=st.data())
    def refused_while_loading(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from([x for x in self.leases if not x.ready]))
        call = data.draw(st.sampled_from(("extend", "commit", "finish")))
        args = ([1],) if call == "extend" else ()
        assert_refused(self.cache, LeaseError, lambda: getattr(self.cache, call)(lease, *args),
                       match="waits for its load-back")

    @precondition(lambda self: any(lease.ready for lease in self.leases))
    @rule(data=st.data(), finish=st.booleans())
    def commit_or_finish(self, data: st.DataObject, finish: bool) -> None:
        lease = data.draw(st.sampled_from(self.ready()), label="lease")
        self.compute(lease)
        if not finish:
            self.cache.commit(lease)
            return
        self.finish_lease(lease)

    def finish_lease(self, lease: Lease) -> None:
        self.compute(lease)
        self.leases.remove(lease)
        cached = self.cache.finish(lease)
        assert lease.state is LeaseState.FINISHED and cached <= lease.num_tokens
        self.changed(self.cache.poll())  # a finish that waited may have failed leases

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.leases), label="lease")
        self.leases.remove(lease)
        self.cache.abort(lease)

    @rule()
    def poll(self) -> None:
        self.changed(self.cache.poll())

    @rule(data=st.data())
    def wait(self, data: st.DataObject) -> None:
        waiting = [lease for lease in self.leases if not lease.ready]
        if waiting and data.draw(st.booleans(), label="one lease?"):
            lease = data.draw(st.sampled_from(waiting), label="lease")
            self.changed(self.cache.wait(lease))
            assert lease.ready or lease.state is LeaseState.FAILED
            return
        self.changed(self.cache.wait())
        assert not self.cache.host.records and self.engine.in_flight == 0  # type: ignore[union-attr]
        assert all(lease.ready for lease in self.leases)

    @rule(data=st.data(), space=st.sampled_from(NAMESPACES))
    def match(self, data: st.DataObject, space: Any) -> None:
        tokens = self.tokens(data)
        found = self.cache.match(tokens, space)
        assert 0 <= found.length <= len(tokens) and found.host_length >= 0
        assert found.length + found.host_length <= len(tokens)

    @rule(full=st.integers(0, 12), other=st.integers(0, 6))
    def evict(self, full: int, other: int) -> None:
        names = self.cache.names
        budgets = {name: other for name in names[1:]}
        evicted = self.cache.evict(full, **budgets)
        assert set(evicted) == set(names)
        self.changed(self.cache.poll())

    @rule(data=st.data(), space=st.sampled_from(NAMESPACES))
    def insert_direct(self, data: st.DataObject, space: Any) -> None:
        tokens = self.tokens(data)
        state = self.state is not None
        allocation = self.attempt(self.cache.allocate, len(tokens), state=state)
        if allocation is None or isinstance(allocation, OutOfSlotsError):
            return
        self.model.fill(allocation, space, tokens, self.page)
        self.remember(tokens)
        if data.draw(st.integers(0, 4), label="release?") == 0:
            self.cache.release(allocation)
            return
        self.allocations.append(allocation)
        self.cache.insert(tokens, allocation, space)
        self.allocations.remove(allocation)
        self.changed(self.cache.poll())

    @rule()
    def reset(self) -> None:
        self.cache.reset()
        # a lease whose load-back fails while reset waits for the copies fails first
        assert all(lease.state in (LeaseState.INVALIDATED, LeaseState.FAILED)
                   for lease in self.leases)
        self.leases = []
        assert not self.cache.host.records and self.engine.in_flight == 0  # type: ignore[union-attr]

    # ------------------------------------------------------------------ after every step

    @invariant()
    def audited(self) -> None:
        if not hasattr(self, "cache"):
            return
        self.cache.check_invariants()
        check_owners(self.cache, self.leases, self.allocations)
        self.model.check_tree()
        assert self.cache.leases() == self.leases


SETTINGS = settings(derandomize=True, deadline=None, max_examples=60,
                    stateful_step_count=40, database=None)

MACHINES: dict[str, type[HostTierMachine]] = {}
for _name, _components in (("Full", ("full",)), ("FullSwa", ("full", "swa")),
                           ("FullMamba", ("full", "mamba")),
                           ("FullSwaMamba", ("full", "swa", "mamba"))):
    _machine = type(f"{_name}HostMachine", (HostTierMachine,), {"COMPONENTS": _components})
    _machine.TestCase.settings = SETTINGS
    MACHINES[_name] = _machine

TestFullHost = MACHINES["Full"].TestCase
TestFullSwaHost = MACHINES["FullSwa"].TestCase
TestFullMambaHost = MACHINES["FullMamba"].TestCase
TestFullSwaMambaHost = MACHINES["FullSwaMamba"].TestCase


# ---------------------------------------------------------------------- the model can fail


class _WrongRows(NumpyCopyEngine):
    """Loads back each batch's host rows in reverse order: the wrong bytes per slot."""

    def _move(self, copies: list[Copy]) -> None:
        super()._move([Copy(c.component, c.direction, c.source[::-1], c.destination)
                       if c.direction is Direction.TO_DEVICE else c for c in copies])


def test_the_kv_model_catches_a_load_back_of_the_wrong_rows() -> None:
    machine = type("WrongRowsMachine", (HostTierMachine,), {"ENGINE": _WrongRows})
    quick = settings(SETTINGS, phases=[Phase.generate])
    with pytest.raises(AssertionError, match=r"reads wrong|holds wrong"):
        run_state_machine_as_test(machine, settings=quick)
