"""Stateful (hypothesis) test of PrefixCache for every component combination.

One :class:`RuleBasedStateMachine` per combination — FULL, FULL+SWA, FULL+MAMBA and
FULL+SWA+MAMBA — at page sizes 1 and 4 (eight machines), with tiny pools (eviction and
``OutOfSlotsError`` are frequent), a four-token vocabulary (prompts share prefixes) and two
namespaces. Rules drive the whole request life-cycle (admit, extend, commit, checkpoint,
slide_window, finish, abort), plus match, evict, explicit lock/unlock and reset.

The reference model is rebuilt from the tree after every step: per namespace, every cached
page-aligned prefix with, per token, its FULL and SWA slot (``None`` when not live), and the
MAMBA state at its end. From that structure alone it computes, with the rules of
DESIGN.md §3, the usable length of any query (FULL: every token in [0, L) live; SWA: every
token in [max(0, L-W), L) live; MAMBA: a state exactly at L, or L = 0; the largest such
page-aligned L within the structural match), and ``match``/``admit`` must agree with it.

After every step: ``check_invariants()``; FULL >= SWA >= MAMBA lock counts on every node;
in every pool, free + tree-held + lease-held == capacity with no slot held twice; the size
ledgers agree with the model; every value that was locked before the step is still there
with the same slots; every prefix that was usable when a live lock took it is still
usable, with the same FULL slots; and no unlocked leaf lacks a component's value (such a
leaf could never end a match: it is removed whole, or never inserted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from radixkv import CacheConfig, PrefixCache
from radixkv.cache import Lease, LeaseState
from radixkv.core.types import Lock
from radixkv.errors import LeaseError, LockError, OutOfSlotsError

from ..cache.invalid_calls import InvalidCalls, numeric
from .support import check_lock_order

VOCAB = 3
"""Tokens are 0..VOCAB: prompts share prefixes all the time."""

MAX_PROMPT = 24
MAX_LEASES = 4
NAMESPACES = (None, (1, "tenant"))
POLICIES = ("lru", "lfu", "fifo", "mru", "filo", "priority", "slru", "tlru")

Namespace = Any
Prefix = tuple[int, ...]


# ---------------------------------------------------------------------- the reference model


@dataclass(frozen=True)
class Page:
    """One cached page of a prefix: per token its FULL and SWA slot (``None``: not live), and
    the MAMBA state at the page's end (``None``: none there)."""

    full: tuple[int | None, ...]
    swa: tuple[int | None, ...]
    state: int | None


@dataclass(frozen=True)
class Walk:
    """A query run along the model: how far it matches structurally (whole pages), per token
    on the way its FULL and SWA slot, and the MAMBA states at positions on the way."""

    branch: int
    full: list[int | None]
    swa: list[int | None]
    states: dict[int, int]


class Reference:
    """What the tree caches, read into plain data: ``pages[namespace][prefix]`` describes the
    last page of every cached page-aligned ``prefix``. Knows nothing of nodes or edges."""

    def __init__(self, cache: PrefixCache) -> None:
        self.page = cache.page_size
        kinds = [component.name for component in cache.tree.components]
        self.swa = kinds.index("swa") if "swa" in kinds else None
        self.mamba = kinds.index("mamba") if "mamba" in kinds else None
        self.window = cache.config.sliding_window
        self.normalize = cache.namespace_of
        self.pages: dict[Namespace, dict[Prefix, Page]] = {}
        self.cached = [0] * len(kinds)
        for namespace, root in cache.tree.roots.items():
            table: dict[Prefix, Page] = {}
            self.pages[namespace] = table
            stack: list[tuple[Any, Prefix]] = [(root, ())]
            while stack:
                node, prefix = stack.pop()
                for child in node.children.values():
                    key = tuple(np.frombuffer(child.key, dtype="<u4").tolist())
                    self._read(table, child, prefix, key)
                    stack.append((child, prefix + key))

    def _read(self, table: dict[Prefix, Page], node: Any, prefix: Prefix, key: Prefix) -> None:
        values = node.values
        full = _slots(values[0], len(key))
        swa = _slots(None if self.swa is None else values[self.swa], len(key))
        state = None
        if self.mamba is not None and values[self.mamba] is not None:
            state = int(values[self.mamba][0])
        self.cached[0] += sum(slot is not None for slot in full)
        if self.swa is not None:
            self.cached[self.swa] += sum(slot is not None for slot in swa)
        if self.mamba is not None:
            self.cached[self.mamba] += state is not None
        page = self.page
        assert len(key) % page == 0, f"node {node.id} is not whole pages"
        for end in range(page, len(key) + 1, page):
            whole = prefix + key[:end]
            assert whole not in table, f"prefix {whole} is cached twice"
            table[whole] = Page(full[end - page : end], swa[end - page : end],
                                state if end == len(key) else None)

    def walk(self, namespace: Namespace, tokens: Any) -> Walk:
        table = self.pages.get(self.normalize(namespace), {})
        tokens = tuple(tokens)
        full: list[int | None] = []
        swa: list[int | None] = []
        states: dict[int, int] = {}
        pos, page = 0, self.page
        while pos + page <= len(tokens):
            found = table.get(tokens[: pos + page])
            if found is None:
                break
            full += found.full
            swa += found.swa
            pos += page
            if found.state is not None:
                states[pos] = found.state
        return Walk(pos, full, swa, states)

    def accepts(self, walk: Walk, length: int) -> bool:
        """Whether every present component accepts the prefix of ``length`` tokens."""
        if any(slot is None for slot in walk.full[:length]):
            return False
        if self.swa is not None:
            assert self.window is not None
            if any(slot is None for slot in walk.swa[max(0, length - self.window) : length]):
                return False
        return self.mamba is None or length == 0 or length in walk.states

    def usable(self, namespace: Namespace, tokens: Any) -> tuple[int, list[int], int | None]:
        """(usable length, its FULL slots, the MAMBA state at its end) of a query."""
        walk = self.walk(namespace, tokens)
        for length in range(walk.branch, -1, -self.page):
            if self.accepts(walk, length):
                slots = [s for s in walk.full[:length] if s is not None]
                return length, slots, walk.states.get(length) if length else None
        raise AssertionError("length 0 is always accepted")

    def hints(self, namespace: Namespace, tokens: list[int], matched: int,
              queried: list[int], interval: int) -> tuple[int, ...]:
        """Checkpoint hints for a prompt ``tokens`` whose (possibly capped) query ``queried``
        matched ``matched`` tokens: every interval past the match, the branch point, and the
        last page boundary of the prompt."""
        end = len(tokens) - len(tokens) % self.page
        branch = self.walk(namespace, queried).branch
        hints = set(range(matched - matched % interval + interval, end + 1, interval))
        if matched < branch < end:
            hints.add(branch)
        if end > matched:
            hints.add(end)
        return tuple(sorted(hints))


def _slots(value: Any, length: int) -> tuple[int | None, ...]:
    if value is None:
        return (None,) * length
    assert len(value) == length
    return tuple(int(slot) for slot in value)


@dataclass(frozen=True)
class Guard:
    """A prefix a live lock protects: its FULL slots must not change and, if it was usable
    when the lock was taken, it must stay usable."""

    namespace: Namespace
    prefix: Prefix
    full: tuple[int, ...]
    usable: bool


# ---------------------------------------------------------------------- the machine


class HybridMachine(InvalidCalls, RuleBasedStateMachine):
    """Base machine; subclasses fix ``COMBO`` and ``PAGE``. Numbers are drawn as Python ints
    or numpy integer scalars alike; :class:`InvalidCalls` mixes in refused calls."""

    COMBO: tuple[str, ...] = ("full",)
    PAGE = 1

    def __init__(self) -> None:
        super().__init__()
        self.cache: PrefixCache | None = None
        self.leases: list[Lease] = []
        self.receipts: list[tuple[Lock, Guard]] = []
        self.guards: dict[int, Guard] = {}  # lease id -> what its lock protects
        self.history: list[list[int]] = []
        self.locked: list[tuple[Namespace, Prefix, int, int, tuple[int, ...]]] = []
        self.model: Reference | None = None

    # ------------------------------------------------------------------ set-up

    @initialize(
        full_pages=st.integers(6, 14),
        swa_pages=st.integers(3, 10),
        window=st.integers(3, 6),
        interval=st.sampled_from([1, 2]),
        states=st.integers(3, 8),
        policy=st.sampled_from(POLICIES),
        data=st.data(),
    )
    def setup(self, full_pages: int, swa_pages: int, window: int, interval: int, states: int,
              policy: str, data: st.DataObject) -> None:
        page = self.PAGE
        scale = 4 // page  # page 1 gets as many tokens as page 4
        extra: dict[str, Any] = {}
        if "swa" in self.COMBO:
            extra.update(sliding_window=window, swa_capacity=swa_pages * scale * page)
        if "mamba" in self.COMBO:
            extra.update(mamba_track_interval=interval * page, mamba_states=states)
        self.cache = PrefixCache(CacheConfig(
            capacity=full_pages * scale * page, page_size=page, policy=policy,
            components=self.COMBO, **extra))
        self.kinds = list(self.COMBO)
        self.swa = self.kinds.index("swa") if "swa" in self.kinds else None
        self.mamba = self.kinds.index("mamba") if "mamba" in self.kinds else None
        for _ in range(data.draw(st.integers(0, 4), label="warm-up requests")):
            self.serve(data)

    # ------------------------------------------------------------------ helpers

    @property
    def c(self) -> PrefixCache:
        assert self.cache is not None
        return self.cache

    def subject(self) -> PrefixCache:
        return self.c

    def live_leases(self) -> list[Lease]:
        return self.leases

    def ref(self) -> Reference:
        if self.model is None:
            self.model = Reference(self.c)
        return self.model

    def changed(self) -> None:
        self.model = None

    def prompt(self, data: st.DataObject, space: Namespace) -> list[int]:
        """A prompt for ``space``: mostly a cached prefix (read from the model) or an earlier
        prompt, cut somewhere and extended with fresh tokens; sometimes all fresh."""
        source = data.draw(st.integers(0, 3), label="source")
        cached = sorted(self.ref().pages.get(self.c.namespace_of(space), {}))
        bases = [list(p) for p in cached] if source < 2 else self.history
        fresh = data.draw(st.integers(0, MAX_PROMPT), label="fresh")
        tokens = data.draw(st.lists(st.integers(0, VOCAB), min_size=fresh, max_size=fresh),
                           label="tokens")
        if source < 3 and bases:
            base = data.draw(st.sampled_from(bases), label="base")
            if data.draw(st.booleans(), label="cut?"):
                base = base[: data.draw(st.integers(0, len(base)), label="cut")]
            tokens = base + tokens[: data.draw(st.integers(0, 2 * self.PAGE + 1), label="more")]
        return tokens[:MAX_PROMPT]

    def remember(self, tokens: list[int]) -> None:
        if tokens and tokens not in self.history:
            self.history = [*self.history[-15:], tokens]

    def namespace(self, data: st.DataObject) -> Namespace:
        """Mostly the default namespace."""
        return NAMESPACES[data.draw(st.integers(0, 3), label="namespace") == 3]

    def pick_lease(self, data: st.DataObject) -> Lease:
        return data.draw(st.sampled_from(self.leases), label="lease")

    def guard_for(self, namespace: Namespace, prefix: Prefix, full: list[int]) -> Guard:
        usable = self.ref().usable(namespace, prefix)[0] == len(prefix)
        return Guard(namespace, prefix, tuple(full), usable)

    def expected_insert(self, lease: Lease, length: int) -> int:
        """How many tokens the tree holds for ``lease`` after inserting its first
        ``length`` (DESIGN §3 and the components' insert limits)."""
        key_length = length - length % self.PAGE
        owned = lease.tree_owned
        if key_length <= owned:
            return owned
        live_from = min(lease.swa_dropped, key_length)
        limit = key_length
        while True:  # each component may cut shorter once another has cut
            cut = limit
            if self.swa is not None and live_from >= cut:
                cut = min(owned, cut)  # the new tail already left the window
            if self.mamba is not None:
                cut = min(cut, max([owned, *(p for p in lease.checkpoints if p <= cut)]))
            if cut == limit:
                return max(owned, limit)
            limit = cut

    def check_inserted(self, lease: Lease, tokens: list[int], held_from: int, cached: int,
                       saved: dict[int, int]) -> None:
        """After commit/finish: FULL live on the cached prefix (the lease's slots where it is
        still active), SWA live where the lease still held its window, and a state at every
        checkpoint the insert covered."""
        walk = self.ref().walk(lease.namespace, tokens[:cached])
        assert walk.branch == cached
        assert None not in walk.full
        if lease.state is LeaseState.ACTIVE:
            assert lease.slots[:cached].tolist() == walk.full
        if self.swa is not None:
            assert None not in walk.swa[held_from:cached], (held_from, cached, walk.swa)
        assert all(p in walk.states for p in saved if p <= cached)

    def attempt(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """Run ``call``; on :class:`OutOfSlotsError` check that nothing changed and return
        the exception."""
        before = self.c.snapshot()
        try:
            return call(*args, **kwargs)
        except OutOfSlotsError as error:
            assert self.c.snapshot() == before
            return error

    # ------------------------------------------------------------------ admission and match

    @precondition(lambda self: len(self.leases) < MAX_LEASES)
    @rule(data=st.data())
    def admit(self, data: st.DataObject) -> None:
        self.do_admit(data)

    def do_admit(self, data: st.DataObject) -> Lease | None:
        """Admit a prompt; check what it reuses and its hints against the model."""
        space = self.namespace(data)
        tokens = self.prompt(data, space)
        max_match = None
        if tokens and data.draw(st.booleans(), label="cap"):
            max_match = data.draw(st.integers(0, len(tokens)), label="max_match")
        queried = tokens if max_match is None else tokens[:max_match]
        length, slots, state = self.ref().usable(space, queried)
        interval = self.c.config.mamba_track_interval
        hints = () if interval is None else self.ref().hints(space, tokens, length, queried,
                                                              interval)
        lease = self.attempt(
            self.c.admit, tokens, space,
            max_match=None if max_match is None else numeric(data, max_match),
            priority=numeric(data, data.draw(st.integers(0, 2), label="priority")))
        if isinstance(lease, OutOfSlotsError):
            return None
        self.changed()
        assert lease.cached_length == lease.tree_owned == length
        assert lease.slots[:length].tolist() == slots
        assert lease.tokens.tolist() == tokens
        assert len(lease.allocated_slots) == self.c.pages_for(len(tokens))
        assert (lease.lock is None) == (length == 0)
        if self.mamba is not None:
            assert lease.copy_state_from == state
            assert lease.state_slot is not None and lease.state_slot != state
            assert lease.checkpoint_hints == hints
        self.leases.append(lease)
        self.remember(tokens)
        if length:
            self.guards[lease.id] = Guard(lease.namespace, tuple(tokens[:length]),
                                          tuple(slots), True)
        return lease

    @rule(data=st.data())
    def serve(self, data: st.DataObject) -> None:
        """A whole request as an engine runs it: admit, save a state at every hint, decode a
        little, slide the window over what was computed, finish."""
        lease = self.do_admit(data)
        if lease is None:
            return
        if self.mamba is not None:
            for position in lease.checkpoint_hints:
                if isinstance(self.attempt(self.c.checkpoint, lease, position), OutOfSlotsError):
                    break
                self.changed()
        if data.draw(st.booleans(), label="decode?"):
            more = data.draw(st.lists(st.integers(0, VOCAB), min_size=1, max_size=self.PAGE + 1),
                             label="decode")
            if not isinstance(self.attempt(self.c.extend, lease, more), OutOfSlotsError):
                self.changed()
        if self.swa is not None and data.draw(st.booleans(), label="slide?"):
            self.c.slide_window(lease)
            self.changed()
        self.leases.remove(lease)
        self.guards.pop(lease.id, None)
        self.do_finish(lease)

    @rule(data=st.data())
    def match(self, data: st.DataObject) -> None:
        space = self.namespace(data)
        tokens = self.prompt(data, space)
        length, slots, state = self.ref().usable(space, tokens)
        found = self.c.match(tokens, space)  # recency only: the model is unchanged
        assert found.length == length
        assert found.slots.tolist() == slots
        assert (found.node is None) == (length == 0)
        if found.node is not None:
            node = self.c.tree.node(found.node)
            assert node.start < length <= node.end
        if self.mamba is not None:
            assert found.mamba_slot == state
            interval = self.c.config.mamba_track_interval
            assert interval is not None
            assert found.checkpoint_hints == self.ref().hints(space, tokens, length, tokens,
                                                              interval)

    # ------------------------------------------------------------------ running requests

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data())
    def extend(self, data: st.DataObject) -> None:
        lease = self.pick_lease(data)
        more = data.draw(st.lists(st.integers(0, VOCAB), min_size=1, max_size=2 * self.PAGE),
                         label="decode")
        before = lease.tokens.tolist()
        slots = self.attempt(self.c.extend, lease, more)
        if isinstance(slots, OutOfSlotsError):
            return
        self.changed()
        assert lease.tokens.tolist() == before + more
        assert slots.tolist() == lease.slots[len(before) :].tolist()
        assert len(lease.allocated_slots) == self.c.pages_for(lease.num_tokens)

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        lease = self.pick_lease(data)
        low = data.draw(st.sampled_from([0, lease.tree_owned]), label="low")
        length = data.draw(st.integers(low, lease.num_tokens), label="length")
        expected = self.expected_insert(lease, length)
        held_from = max(lease.tree_owned, lease.swa_dropped)
        saved = dict(lease.checkpoints)
        tokens = lease.tokens.tolist()
        cached = self.c.commit(lease, numeric(data, length))
        self.changed()
        assert cached == lease.tree_owned == expected
        assert lease.checkpoints == {p: s for p, s in saved.items() if p > cached}
        self.check_inserted(lease, tokens, held_from, cached, saved)
        self.remember(tokens[:MAX_PROMPT])
        if cached:
            assert lease.lock is not None
            self.guards[lease.id] = self.guard_for(
                lease.namespace, tuple(tokens[:cached]), lease.slots[:cached].tolist())

    @precondition(lambda self: bool(self.leases) and "mamba" in self.COMBO)
    @rule(data=st.data())
    def checkpoint(self, data: st.DataObject) -> None:
        lease = self.pick_lease(data)
        page = self.PAGE
        free = [p for p in range(lease.tree_owned + 1, lease.num_tokens + 1)
                if p % page == 0 and p not in lease.checkpoints]
        if not free:
            return
        hinted = [p for p in lease.checkpoint_hints if p in free]
        choices = hinted if hinted and data.draw(st.booleans(), label="hinted") else free
        position = data.draw(st.sampled_from(choices), label="position")
        slot = self.attempt(self.c.checkpoint, lease, numeric(data, position))
        if isinstance(slot, OutOfSlotsError):
            return
        self.changed()
        assert lease.checkpoints[position] == slot

    @precondition(lambda self: bool(self.leases) and "swa" in self.COMBO)
    @rule(data=st.data())
    def slide_window(self, data: st.DataObject) -> None:
        lease = self.pick_lease(data)
        computed = data.draw(st.integers(0, lease.num_tokens), label="computed")
        window = self.c.config.sliding_window
        assert window is not None and self.swa is not None
        page = self.PAGE
        dropped = max(0, computed - computed % page - window)
        dropped -= dropped % page
        held_from = max(lease.tree_owned, lease.swa_dropped)
        expected = max(0, dropped - held_from) if dropped > lease.swa_dropped else 0
        final = max(lease.swa_dropped, dropped)
        pool = self.c.pools[self.swa]
        available = pool.available
        assert self.c.slide_window(lease, numeric(data, computed)) == expected
        self.changed()
        assert pool.available == available + expected
        assert lease.swa_dropped == final

    def close(self, data: st.DataObject, finish: bool) -> None:
        lease = self.pick_lease(data)
        self.leases.remove(lease)
        self.guards.pop(lease.id, None)
        if finish:
            self.do_finish(lease)
            return
        self.c.abort(lease)
        self.changed()
        assert lease.state is LeaseState.ABORTED

    def do_finish(self, lease: Lease) -> None:
        expected = self.expected_insert(lease, lease.num_tokens)
        held_from = max(lease.tree_owned, lease.swa_dropped)
        saved = dict(lease.checkpoints)
        tokens = lease.tokens.tolist()
        cached = self.c.finish(lease)
        self.changed()
        assert cached == expected
        assert lease.state is LeaseState.FINISHED
        self.check_inserted(lease, tokens, held_from, cached, saved)
        self.remember(tokens[:MAX_PROMPT])

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        self.close(data, finish=True)

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        self.close(data, finish=False)

    # ------------------------------------------------------------------ eviction, locks, reset

    @rule(data=st.data())
    def evict(self, data: st.DataObject) -> None:
        budgets = {}
        for kind in self.kinds:
            budget = data.draw(st.integers(0, 4 * self.PAGE), label=f"{kind} budget")
            budgets[kind] = 10**6 if budget == 4 * self.PAGE else budget  # or all of it
        available = [pool.available for pool in self.c.pools.pools]
        freed = self.c.evict(**{kind: numeric(data, budget) if budget < 128 else budget
                                for kind, budget in budgets.items()})
        self.changed()
        assert list(freed) == self.kinds
        for index, kind in enumerate(self.kinds):
            assert self.c.pools[index].available == available[index] + freed[kind]
            if freed[kind] < budgets[kind]:  # then nothing unlocked of it is left
                unlocked = [node.id for node in self.c.tree.nodes.values()
                            if node.values[index] is not None and not node.locks[index]]
                assert not unlocked, f"{kind}: budget {budgets[kind]} unmet, {unlocked} left"

    @rule(data=st.data())
    def lock(self, data: st.DataObject) -> None:
        space = self.namespace(data)
        tokens = self.prompt(data, space)
        found = self.c.match(tokens, space)
        assert found.length == self.ref().usable(space, tokens)[0]
        if found.node is None:
            return
        node = self.c.tree.node(found.node)
        prefix = _prefix_of(node)
        full = self.ref().walk(space, prefix).full
        receipt = self.c.lock(found.node)
        self.changed()
        assert None not in full
        self.receipts.append((receipt, self.guard_for(space, prefix, full)))

    @precondition(lambda self: bool(self.receipts))
    @rule(data=st.data())
    def unlock(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.receipts) - 1), label="receipt")
        receipt, _ = self.receipts.pop(index)
        self.c.unlock(receipt)
        self.changed()
        if data.draw(st.booleans(), label="again"):
            before = self.c.snapshot()
            try:
                self.c.unlock(receipt)
            except LockError:
                pass
            else:
                raise AssertionError("a released lock was released again")
            assert self.c.snapshot() == before

    @rule(data=st.data())
    def reset(self, data: st.DataObject) -> None:
        if data.draw(st.integers(0, 7), label="reset?") < 7:  # rarely
            return
        self.c.reset()
        self.changed()
        for lease in self.leases:
            assert lease.state is LeaseState.INVALIDATED
            try:
                self.c.finish(lease)
            except LeaseError:
                pass
            else:
                raise AssertionError("a lease outlived reset()")
        self.leases, self.receipts, self.guards, self.locked = [], [], {}, []
        assert all(pool.available == pool.capacity for pool in self.c.pools.pools)

    # ------------------------------------------------------------------ after every step

    @invariant()
    def audit(self) -> None:
        if self.cache is None:
            return
        cache = self.c
        cache.check_invariants()
        check_lock_order(cache)
        model = self.ref()
        self.check_slots()
        stats = cache.stats()
        for index, kind in enumerate(self.kinds):
            ledger = stats.components[kind]
            assert ledger.cached == model.cached[index], (kind, ledger, model.cached)
            assert ledger.evictable + ledger.protected == ledger.cached
        self.check_locked_values(model)
        for node in cache.tree.nodes.values():  # a leaf that lost a value is removed whole
            if node.parent is not None and not node.children and not any(node.locks):
                missing = [kind for kind, value in zip(self.kinds, node.values) if value is None]
                assert not missing, f"unlocked leaf {node} lacks {missing}"
        guards = [*self.guards.values(), *(guard for _, guard in self.receipts)]
        for guard in guards:
            walk = model.walk(guard.namespace, guard.prefix)
            assert tuple(walk.full[: len(guard.prefix)]) == guard.full, guard
            if guard.usable:
                assert model.usable(guard.namespace, guard.prefix)[0] == len(guard.prefix), guard
        self.locked = self.locked_values()

    def check_slots(self) -> None:
        """Per pool: what the tree and the leases hold is exactly what is allocated, no slot
        twice, and free + held == capacity."""
        cache = self.c
        held: list[list[int]] = [[] for _ in self.kinds]
        for node in cache.tree.nodes.values():
            for index, value in enumerate(node.values):
                if value is not None:
                    held[index] += value.tolist()
        for lease in self.leases:
            assert lease.state is LeaseState.ACTIVE
            held[0] += lease.own_slots.tolist()
            if self.swa is not None:
                held[self.swa] += lease.own_swa_slots.tolist()
            if self.mamba is not None:
                assert lease.state_slot is not None
                held[self.mamba] += [lease.state_slot, *lease.checkpoints.values()]
        assert len(cache.leases()) == len(self.leases)
        for kind, pool, slots in zip(self.kinds, cache.pools.pools, held):
            assert len(set(slots)) == len(slots), f"{kind}: a slot is held twice"
            every = np.arange(pool.capacity, dtype=np.int64)
            allocated = every[pool.is_allocated(every)].tolist()
            assert sorted(slots) == allocated, f"{kind}: leaked or foreign slots"
            assert pool.available + len(slots) == pool.capacity

    def locked_values(self) -> list[tuple[Namespace, Prefix, int, int, tuple[int, ...]]]:
        """(namespace, prefix to the node's end, component, node start, slots) of every value
        a lock protects."""
        found = []
        for node in self.c.tree.nodes.values():
            if node.parent is None:
                continue
            for index, value in enumerate(node.values):
                if value is not None and node.locks[index]:
                    found.append((node.namespace, _prefix_of(node), index, node.start,
                                  tuple(value.tolist())))
        return found

    def check_locked_values(self, model: Reference) -> None:
        """Every value locked before the step is still cached at the same positions, with the
        same slots (a split may have cut its node in two)."""
        for namespace, prefix, index, start, slots in self.locked:
            walk = model.walk(namespace, prefix)
            assert walk.branch == len(prefix), f"locked prefix {prefix} is gone"
            if index == self.mamba:
                assert (walk.states.get(len(prefix)),) == slots, "a locked state is gone"
            else:
                column = walk.full if index == 0 else walk.swa
                assert tuple(column[start : len(prefix)]) == slots, "a locked value changed"


def _prefix_of(node: Any) -> Prefix:
    """Tokens from the root to the end of ``node``."""
    parts = []
    while node.parent is not None:
        parts.append(np.frombuffer(node.key, dtype="<u4").tolist())
        node = node.parent
    return tuple(token for part in reversed(parts) for token in part)


# ---------------------------------------------------------------------- one machine a case

SETTINGS = settings(derandomize=True, deadline=None, max_examples=40, stateful_step_count=30)

MACHINES: dict[str, type[HybridMachine]] = {}
for _combo in (("full",), ("full", "swa"), ("full", "mamba"), ("full", "swa", "mamba")):
    for _page in (1, 4):
        _name = f"{''.join(c.capitalize() for c in _combo)}Page{_page}"
        _machine = type(f"{_name}Machine", (HybridMachine,), {"COMBO": _combo, "PAGE": _page})
        _machine.TestCase.settings = SETTINGS
        MACHINES[_name] = _machine

TestFullPage1 = MACHINES["FullPage1"].TestCase
TestFullPage4 = MACHINES["FullPage4"].TestCase
TestFullSwaPage1 = MACHINES["FullSwaPage1"].TestCase
TestFullSwaPage4 = MACHINES["FullSwaPage4"].TestCase
TestFullMambaPage1 = MACHINES["FullMambaPage1"].TestCase
TestFullMambaPage4 = MACHINES["FullMambaPage4"].TestCase
TestFullSwaMambaPage1 = MACHINES["FullSwaMambaPage1"].TestCase
TestFullSwaMambaPage4 = MACHINES["FullSwaMambaPage4"].TestCase


# ---------------------------------------------------------------------- found by the machines


def test_a_finish_cut_at_a_checkpoint_before_the_live_window_caches_no_tombstoned_leaf() -> None:
    """FULL+SWA+MAMBA: the request saved a state at 2 only, then its window slid to [4, 6).
    MAMBA cuts the insert at 2, where every token already left the window: a leaf [0, 2)
    without SWA no match can end in (the tail rule of the SWA component), so nothing is
    cached and every slot goes back."""
    cache = PrefixCache(CacheConfig(capacity=16, components=("full", "swa", "mamba"),
                                    sliding_window=2, mamba_track_interval=1, mamba_states=8))
    lease = cache.admit([10, 11, 12, 13, 14, 15])
    cache.checkpoint(lease, 2)
    assert cache.slide_window(lease) == 4
    assert cache.finish(lease) == 0
    cache.check_invariants()
    assert len(cache.tree.nodes) - len(cache.tree.roots) == 0
    assert all(pool.available == pool.capacity for pool in cache.pools.pools)
