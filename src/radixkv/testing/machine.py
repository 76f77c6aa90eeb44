"""The conformance kit's state machine: one cache of a given set of component specs, driven
through the request life-cycle (admit / extend / commit / checkpoint / slide_window / finish
/ abort) and compared with the reference model after every step. The other rules live in
:mod:`.lifecycle` and :mod:`.housekeeping`, the audit after every step in :mod:`.audit`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from ..cache import Allocation, CacheConfig, Lease, PrefixCache
from ..components import ComponentSpec
from ..core.policy import POLICIES
from ..errors import OutOfSlotsError
from .reference import Prefix, Reference, Rule, rules_of

VOCAB = 3
"""Tokens are 0..VOCAB: prompts share prefixes all the time."""

MAX_PROMPT = 24
MAX_LEASES = 4
NAMESPACES: tuple[Any, ...] = (None, (1, "tenant"))

T = TypeVar("T")


@dataclass(frozen=True)
class Plan:
    """What one machine runs: the cache's specs in tree order and its page size."""

    specs: tuple[ComponentSpec, ...]
    page: int

    def config(self, full_pages: int, policy: str = "lru") -> CacheConfig:
        """The cache of ``full_pages`` pages of FULL slots (as many tokens at every page
        size, so that eviction is as frequent)."""
        capacity = full_pages * self.page * max(1, 4 // self.page)
        return CacheConfig(capacity=capacity, page_size=self.page, policy=policy,
                           components=self.specs)


@dataclass(frozen=True)
class Guard:
    """A prefix a live lock protects: its primary slots must not change and, if it was
    usable when the lock was taken, it must stay usable."""

    namespace: Any
    prefix: Prefix
    primary: tuple[int, ...]
    usable: bool


class Machine(RuleBasedStateMachine):
    """Base machine; :func:`.check.seed_machine` makes one class per :class:`Plan`."""

    PLAN: Plan

    def __init__(self) -> None:
        super().__init__()
        self.cache: PrefixCache | None = None
        self.leases: list[Lease] = []
        self.receipts: list[tuple[Any, Guard]] = []
        self.guards: dict[int, Guard] = {}
        self.history: list[list[int]] = []
        self.locked: list[tuple[Any, Prefix, int, int, tuple[int, ...]]] = []
        self.model: Reference | None = None
        self.allocations: list[tuple[Allocation, int]] = []
        """Caller-held allocations and the tokens each was made for."""

    @initialize(full_pages=st.integers(6, 14), policy=st.sampled_from(sorted(POLICIES)),
                data=st.data())
    def setup(self, full_pages: int, policy: str, data: st.DataObject) -> None:
        self.cache = PrefixCache(self.PLAN.config(full_pages, policy))
        self.declared: list[Rule] = rules_of(self.cache)
        self.names = [rule.name for rule in self.declared]
        self.tokenwise = [i for i, rule in enumerate(self.declared) if rule.per_token]
        states = [i for i, rule in enumerate(self.declared) if not rule.per_token]
        self.state = states[0] if states else None
        self.windowed = [i for i, spec in enumerate(self.PLAN.specs) if spec.windowed]
        for _ in range(data.draw(st.integers(0, 4), label="warm-up requests")):
            self.serve(data)

    # ------------------------------------------------------------------ helpers

    @property
    def c(self) -> PrefixCache:
        assert self.cache is not None
        return self.cache

    @property
    def page(self) -> int:
        return self.PLAN.page

    def ref(self) -> Reference:
        if self.model is None:
            self.model = Reference(self.c)
        return self.model

    def changed(self) -> None:
        self.model = None

    def prompt(self, data: st.DataObject, space: Any) -> list[int]:
        """Mostly a cached prefix or an earlier prompt, cut and extended; sometimes fresh."""
        source = data.draw(st.integers(0, 3), label="source")
        bases = [list(p) for p in sorted(self.ref().table(space))] if source < 2 \
            else self.history
        fresh = data.draw(st.integers(0, MAX_PROMPT), label="fresh")
        tokens = data.draw(st.lists(st.integers(0, VOCAB), min_size=fresh, max_size=fresh),
                           label="tokens")
        if source < 3 and bases:
            base = data.draw(st.sampled_from(bases), label="base")
            if data.draw(st.booleans(), label="cut?"):
                base = base[: data.draw(st.integers(0, len(base)), label="cut")]
            tokens = base + tokens[: data.draw(st.integers(0, 2 * self.page + 1), label="more")]
        return tokens[:MAX_PROMPT]

    def remember(self, tokens: list[int]) -> None:
        if tokens and tokens not in self.history:
            self.history = [*self.history[-15:], tokens]

    def namespace(self, data: st.DataObject) -> Any:
        return NAMESPACES[data.draw(st.integers(0, 3), label="namespace") == 3]

    def pick_lease(self, data: st.DataObject) -> Lease:
        return data.draw(st.sampled_from(self.leases), label="lease")

    def attempt(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T | OutOfSlotsError:
        """Run ``call``; on :class:`OutOfSlotsError` check nothing changed, return it."""
        before = self.c.snapshot()
        try:
            return call(*args, **kwargs)
        except OutOfSlotsError as error:
            assert self.c.snapshot() == before, "a refused call changed the cache"
            return error

    def guard_for(self, namespace: Any, prefix: Prefix, primary: list[int]) -> Guard:
        return Guard(namespace, prefix, tuple(primary), self.ref().usable_at(namespace, prefix))

    def hints(self, length: int, branch: int, num_tokens: int) -> tuple[int, ...]:
        """The state component's hints for a match (its declared hook)."""
        assert self.state is not None
        component = self.c.tree.components[self.state]
        return component.checkpoint_hints(length, branch, num_tokens)

    # ------------------------------------------------------------------ admission, match

    @precondition(lambda self: len(self.leases) < MAX_LEASES)
    @rule(data=st.data())
    def admit(self, data: st.DataObject) -> None:
        self.do_admit(data)

    def do_admit(self, data: st.DataObject) -> Lease | None:
        """Admit a prompt; check what it reuses against the model."""
        space = self.namespace(data)
        tokens = self.prompt(data, space)
        max_match = None
        if data.draw(st.booleans(), label="cap") and tokens:
            max_match = data.draw(st.integers(0, len(tokens)), label="max_match")
        queried = tokens if max_match is None else tokens[:max_match]
        length, slots, walk = self.ref().usable(space, queried)
        lease = self.attempt(self.c.admit, tokens, space, max_match=max_match,
                             priority=data.draw(st.integers(0, 2), label="priority"))
        if isinstance(lease, OutOfSlotsError):
            return None
        self.changed()
        assert lease.cached_length == lease.tree_owned == length
        assert lease.slots[:length].tolist() == slots
        assert lease.tokens.tolist() == tokens
        assert len(lease.allocated_slots) == self.c.pages_for(len(tokens))
        assert (lease.lock is None) == (length == 0)
        self.check_lent(lease, walk, length)
        if self.state is not None:
            state = walk.states[self.state].get(length) if length else None
            assert lease.copy_state_from == state
            assert lease.state_slot is not None and lease.state_slot != state
            assert lease.checkpoint_hints == self.hints(length, walk.branch, len(tokens))
        self.leases.append(lease)
        self.remember(tokens)
        if length:
            self.guards[lease.id] = Guard(lease.namespace, tuple(tokens[:length]),
                                          tuple(slots), True)
        return lease

    def check_lent(self, lease: Lease, walk: Any, length: int) -> None:
        """Each per-token component lent the tree's slots of at least the window the
        prefix needs, and they are live."""
        for index in self.tokenwise:
            name, rule = self.names[index], self.declared[index]
            start = lease.start_of(name)
            needed = min(rule.window_start(length), length)
            assert start <= needed or start == length, (name, start, needed)
            lent = lease.slots_of(name)[: max(0, length - start)].tolist()
            assert lent == walk.columns[index][start:length], (name, lent)

    @rule(data=st.data())
    def serve(self, data: st.DataObject) -> None:
        """A whole request as an engine runs it: admit, save a state at every hint, decode
        a little, slide the windows over what was computed, finish."""
        lease = self.do_admit(data)
        if lease is None:
            return
        if self.state is not None:
            for position in lease.checkpoint_hints:
                if isinstance(self.attempt(self.c.checkpoint, lease, position),
                              OutOfSlotsError):
                    break
                self.changed()
        if data.draw(st.booleans(), label="decode?"):
            more = data.draw(st.lists(st.integers(0, VOCAB), min_size=1,
                                      max_size=self.page + 1), label="decode")
            if not isinstance(self.attempt(self.c.extend, lease, more), OutOfSlotsError):
                self.changed()
        if data.draw(st.booleans(), label="slide?") and self.windowed:
            self.c.slide_window(lease)
            self.changed()
        self.leases.remove(lease)
        self.guards.pop(lease.id, None)
        self.do_finish(lease)

    @rule(data=st.data())
    def match(self, data: st.DataObject) -> None:
        space = self.namespace(data)
        tokens = self.prompt(data, space)
        length, slots, walk = self.ref().usable(space, tokens)
        found = self.c.match(tokens, space)  # recency only: the model is unchanged
        assert found.length == length
        assert found.slots.tolist() == slots
        assert (found.node is None) == (length == 0)
        if found.node is not None:
            node = self.c.tree.node(found.node)
            assert node.start < length <= node.end
        if self.state is not None:
            assert found.mamba_slot == (walk.states[self.state].get(length) if length else None)
            assert found.checkpoint_hints == self.hints(length, walk.branch, len(tokens))

    # ------------------------------------------------------------------ running requests

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data())
    def extend(self, data: st.DataObject) -> None:
        lease = self.pick_lease(data)
        more = data.draw(st.lists(st.integers(0, VOCAB), min_size=1, max_size=2 * self.page),
                         label="decode")
        before = lease.tokens.tolist()
        slots = self.attempt(self.c.extend, lease, more)
        if isinstance(slots, OutOfSlotsError):
            return
        self.changed()
        assert lease.tokens.tolist() == before + more
        assert slots.tolist() == lease.slots[len(before) :].tolist()
        assert len(lease.allocated_slots) == self.c.pages_for(lease.num_tokens)

    def do_finish(self, lease: Lease) -> None:
        """Finish ``lease`` and check what the tree kept (see :mod:`.lifecycle`)."""
        raise NotImplementedError
