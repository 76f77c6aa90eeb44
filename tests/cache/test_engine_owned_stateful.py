"""Engine-owned slots under random request flows (hypothesis): an engine allocates KV slots
itself, computes each slot's content (an oracle: a hash of the namespace and the prefix that
ends at its position), and hands them to the tree with ``adopt``; leases, locks, eviction
and reset run in between. After every step: the cache's audit passes, every page the
engine counts as allocated is held by exactly one of the cache and the engine's running
requests, and every slot a match returns holds the content of its position. The strict
allocator fails the test on any slot given back twice or never handed out."""

from __future__ import annotations

import hashlib

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from radixkv import CacheConfig, PrefixCache
from radixkv.core.types import Lock

from ..memory.engine_allocator import StrictEngineAllocator

CAPACITY = 96
VOCAB = 3  # few tokens: prompts share prefixes often
SPACES = (None, ("lora", 1))


def content(space: object, tokens: list[int]) -> bytes:
    return hashlib.blake2b(repr((space, tokens)).encode(), digest_size=8).digest()


class EngineOwned(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.page = 2
        self.engine = StrictEngineAllocator(CAPACITY, self.page)
        self.cache = PrefixCache(CacheConfig(capacity=CAPACITY, page_size=self.page),
                                 allocators={"full": self.engine})
        self.kv: dict[int, bytes] = {}
        self.locks: list[Lock] = []

    def _engine_slots(self, space: object, tokens: list[int], start: int) -> np.ndarray | None:
        """Slots the engine allocates for ``tokens[start:]`` and fills (None when short)."""
        count = len(tokens) - start
        slots = self.engine.alloc(-(-count // self.page) * self.page)
        if slots is None:
            return None
        for i, slot in enumerate(slots[:count].tolist()):
            self.kv[slot] = content(space, tokens[: start + i + 1])
        return slots

    @rule(tokens=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=24),
          space=st.sampled_from(SPACES), keep_lock=st.booleans())
    def request(self, tokens: list[int], space: object, keep_lock: bool) -> None:
        """SGLang's flow: match, lock, the engine allocates the rest, adopt, unlock."""
        match = self.cache.match(tokens, space)
        borrowed = match.length
        lock = self.cache.lock(match) if borrowed else None
        fresh = self._engine_slots(space, tokens, borrowed)
        if fresh is None:
            self.cache.evict(full=len(tokens))
            if lock is not None:
                self.cache.unlock(lock)
            return
        slots = np.concatenate((match.slots, fresh[: len(tokens) - borrowed]))
        cached = self.cache.adopt(tokens, slots, space, borrowed=borrowed)
        assert cached == len(tokens) - len(tokens) % self.page
        if cached < len(fresh) + borrowed:  # the tail page stays the engine's to free
            self.engine.free(fresh[cached - borrowed:])
        if lock is not None:
            (self.locks.append if keep_lock else self.cache.unlock)(lock)

    @rule(tokens=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=20))
    def lease(self, tokens: list[int]) -> None:
        try:
            lease = self.cache.admit(tokens)
        except MemoryError:
            return
        for position, slot in enumerate(lease.slots.tolist()[lease.cached_length:],
                                        lease.cached_length):
            if position < len(tokens):
                self.kv[slot] = content(None, tokens[: position + 1])
        self.cache.finish(lease)

    @precondition(lambda self: self.locks)
    @rule(data=st.data())
    def unlock(self, data: st.DataObject) -> None:
        self.cache.unlock(self.locks.pop(data.draw(st.integers(0, len(self.locks) - 1))))

    @rule(budget=st.integers(0, 40))
    def evict(self, budget: int) -> None:
        self.cache.evict(full=budget)

    @rule()
    def reset(self) -> None:
        self.cache.reset()
        self.locks.clear()
        assert self.engine.allocated == set()

    @rule(tokens=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=24),
          space=st.sampled_from(SPACES))
    def served_rows_hold_their_prefix(self, tokens: list[int], space: object) -> None:
        match = self.cache.match(tokens, space)
        for position, slot in enumerate(match.slots.tolist()):
            assert self.kv[slot] == content(space, tokens[: position + 1])

    @invariant()
    def accounted(self) -> None:
        self.cache.check_invariants()
        held = set(np.flatnonzero(self.cache.pool.is_allocated(
            np.arange(0, CAPACITY, self.page)))) if CAPACITY else set()
        assert {int(page) for page in held} == self.engine.allocated


EngineOwned.TestCase.settings = settings(max_examples=60, stateful_step_count=30,
                                         deadline=None)
TestEngineOwned = EngineOwned.TestCase


def test_the_oracle_sees_reversed_slots() -> None:
    """Negative control: a request adopted with its pages in reverse order is served wrong
    rows, and the machine's check says so."""
    machine = EngineOwned()
    tokens = [0, 1, 2, 1]
    fresh = machine._engine_slots(None, tokens, 0)
    assert fresh is not None
    machine.cache.adopt(tokens, fresh.reshape(-1, machine.page)[::-1].reshape(-1))
    try:
        machine.served_rows_hold_their_prefix(tokens, None)
    except AssertionError:
        return
    raise AssertionError("reversed slots were served as the right rows")
