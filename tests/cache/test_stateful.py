"""Stateful (model-based) test of PrefixCache.

A hypothesis ``RuleBasedStateMachine`` drives a small cache (eviction is frequent) through
random admit / extend / commit / finish / abort / match / evict / lock / unlock / reset calls
(plus two requests racing on one prompt, admissions sized right at the limit of what fits, and
calls the cache must refuse) and compares it, after every step, with a plain reference model:

* per namespace, the set of cached page-aligned prefixes (token tuples) and the slots of the
  last page of each; every prefix of a cached sequence at a page boundary is cached;
* per active lease, its tokens, its slots and how many of them the tree owns;
* the lock receipts handed out, and the node handles seen.

Which entries an eviction removes depends on the policy, so after an eviction the model is
re-read from the tree, but only after checking that the survivors are a subset of what was
cached (with the same slots), that everything pinned survived, and that enough was evicted.
Everything else (which prefix a match finds, which slots it returns, what an insert keeps and
frees, how many slots are free) is predicted by the model and compared exactly.

Runs derandomized (fixed seed) so CI is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from radixkv.cache import CacheConfig, Lease, LeaseState, PrefixCache
from radixkv.core.node import Node
from radixkv.core.policy import POLICIES
from radixkv.core.types import Lock, NodeId
from radixkv.errors import (
    InvalidArgumentError,
    InvalidNamespaceError,
    InvalidTokensError,
    LeaseError,
    LockError,
    OutOfSlotsError,
    StaleHandleError,
)

from ..audited import assert_refused
from .invalid_calls import InvalidCalls, numeric

Prefix = tuple[int, ...]
Namespace = tuple[object, object]
PageMap = dict[Prefix, tuple[int, ...]]
"""Cached page-aligned prefix -> slots of its last page."""

VOCAB = 4
MAX_PROMPT = 24
MAX_LEASE_TOKENS = 40


def normalize(namespace: Any) -> Namespace:
    return (None, None) if namespace is None else namespace


def node_tokens(node: Node) -> Prefix:
    """Tokens from the root to the end of ``node``."""
    parts = []
    while node.parent is not None:
        parts.append(node.key)
        node = node.parent
    return tuple(np.frombuffer(b"".join(reversed(parts)), dtype="<u4").tolist())


def page_prefixes(tokens: Prefix, page: int, upto: int | None = None) -> set[Prefix]:
    end = len(tokens) if upto is None else upto
    return {tokens[:e] for e in range(page, end + 1, page)}


def read_tree(cache: PrefixCache) -> dict[Namespace, PageMap]:
    """Every cached page-aligned prefix with its last page's slots, read from the tree."""
    page = cache.page_size
    out: dict[Namespace, PageMap] = {}
    for namespace, root in cache.tree.roots.items():
        pages: PageMap = {}
        stack: list[tuple[Node, Prefix]] = [(root, ())]
        while stack:
            node, prefix = stack.pop()
            for child in node.children.values():
                tokens = tuple(np.frombuffer(child.key, dtype="<u4").tolist())
                value = child.values[0]
                assert value is not None, f"node {child.id} lost its FULL value"
                assert len(value) == len(tokens) and len(tokens) % page == 0
                path = prefix
                for i in range(0, len(tokens), page):
                    path = path + tokens[i : i + page]
                    assert path not in pages, f"prefix {path} is cached twice"
                    pages[path] = tuple(int(s) for s in value[i : i + page])
                stack.append((child, path))
        if pages:
            out[namespace] = pages
    return out


@dataclass
class LeaseModel:
    lease: Lease
    namespace: Namespace
    tokens: list[int]
    allocated: list[int]
    tree_owned: int

    @property
    def own(self) -> list[int]:
        return self.allocated[self.tree_owned :]


@dataclass
class Handle:
    node_id: NodeId
    namespace: Namespace
    end: Prefix
    alive: bool = True


@dataclass
class UserLock:
    receipt: Lock
    namespace: Namespace
    end: Prefix


@dataclass
class Model:
    cached: dict[Namespace, PageMap] = field(default_factory=dict)
    leases: list[LeaseModel] = field(default_factory=list)
    handles: list[Handle] = field(default_factory=list)
    locks: list[UserLock] = field(default_factory=list)


class PrefixCacheMachine(InvalidCalls, RuleBasedStateMachine):
    """Base configuration: page size 1, default namespace only. Numbers are drawn as Python
    ints or numpy integer scalars alike; :class:`InvalidCalls` mixes in refused calls."""

    PAGE = 1
    CAPACITY = 64
    NAMESPACES: tuple[Any, ...] = (None,)

    def __init__(self) -> None:
        super().__init__()
        self.cache = PrefixCache(CacheConfig(capacity=self.CAPACITY, page_size=self.PAGE))
        self.model = Model()
        self.history: list[Prefix] = []
        self.closed: list[Lease] = []
        self.dead_locks: list[Lock] = []
        self.fresh_token = 1000

    # ------------------------------------------------------------------ helpers

    def subject(self) -> PrefixCache:
        return self.cache

    def live_leases(self) -> list[Lease]:
        return [rec.lease for rec in self.model.leases]

    def pages_for(self, num_tokens: int) -> int:
        return -(-num_tokens // self.PAGE) * self.PAGE

    def draw_namespace(self, data: st.DataObject) -> Any:
        return data.draw(st.sampled_from(self.NAMESPACES), label="namespace")

    def draw_tokens(self, data: st.DataObject, max_size: int = MAX_PROMPT) -> list[int]:
        """A prompt that usually shares a prefix with something cached, running or seen before."""
        running = [tuple(rec.tokens) for rec in self.model.leases]
        sources = [src for src in (self.history, self.cached_sequences(), running) if src]
        base: Prefix = ()
        if sources and data.draw(st.integers(0, 3), label="reuse") != 0:
            source = data.draw(st.sampled_from(sources), label="source")
            base = data.draw(st.sampled_from(source), label="base")
        cut = data.draw(st.integers(0, min(len(base), max_size)), label="cut")
        size = data.draw(st.integers(0, max_size - cut), label="suffix size")
        suffix = data.draw(
            st.lists(st.integers(0, VOCAB - 1), min_size=size, max_size=size), label="suffix"
        )
        return list(base[:cut]) + suffix

    def cached_sequences(self) -> list[Prefix]:
        """The longest cached sequences (leaves of the model), across namespaces."""
        out: list[Prefix] = []
        for pages in self.model.cached.values():
            parents = {prefix[: -self.PAGE] for prefix in pages}
            out.extend(sorted(set(pages) - parents))
        return out

    @staticmethod
    def as_input(tokens: list[int], data: st.DataObject) -> Any:
        """The same tokens as a list, an int64 array or a uint32 array."""
        kind = data.draw(st.sampled_from(("list", "int64", "uint32")), label="token type")
        if kind == "list":
            return list(tokens)
        return np.array(tokens, dtype=np.int64 if kind == "int64" else np.uint32)

    def remember(self, tokens: list[int]) -> None:
        if tokens and tuple(tokens) not in self.history:
            self.history.append(tuple(tokens))
            del self.history[:-12]

    def model_match(self, namespace: Namespace, tokens: list[int]) -> tuple[int, list[int]]:
        pages = self.model.cached.get(namespace, {})
        length, slots = 0, []
        for end in range(self.PAGE, len(tokens) + 1, self.PAGE):
            prefix = tuple(tokens[:end])
            if prefix not in pages:
                break
            slots.extend(pages[prefix])
            length = end
        return length, slots

    def pinned(self) -> dict[Namespace, set[Prefix]]:
        """Page prefixes pinned by a live lock (leases' and the user's), per namespace."""
        out: dict[Namespace, set[Prefix]] = {}
        for rec in self.model.leases:
            if rec.lease.lock is not None:
                end = node_tokens(rec.lease.lock.node)
                out.setdefault(rec.namespace, set()).update(page_prefixes(end, self.PAGE))
        for user in self.model.locks:
            out.setdefault(user.namespace, set()).update(page_prefixes(user.end, self.PAGE))
        return out

    def pinned_tokens(self) -> int:
        return self.PAGE * sum(len(prefixes) for prefixes in self.pinned().values())

    def cached_tokens(self) -> int:
        return self.PAGE * sum(len(pages) for pages in self.model.cached.values())

    def match_path(self, namespace: Namespace, tokens: list[int], length: int) -> set[Prefix]:
        """Page prefixes a lock of the first ``length`` tokens pins: exactly those (a lock
        ending inside a node splits it)."""
        return page_prefixes(tuple(tokens[:length]), self.PAGE)

    def refresh_handles(self) -> None:
        """A handle dies for good when the prefix ending at its node is evicted (even if the
        same tokens are cached again later, they get a new node)."""
        for handle in self.model.handles:
            if handle.alive and handle.end not in self.model.cached.get(handle.namespace, {}):
                handle.alive = False

    def copy_cached(self) -> dict[Namespace, PageMap]:
        return {ns: dict(pages) for ns, pages in self.model.cached.items()}

    def absorb_eviction(
        self,
        before: dict[Namespace, PageMap],
        required: dict[Namespace, set[Prefix]],
        asked: int,
    ) -> int:
        """Re-read the tree after an operation that may evict; check it only lost entries
        (same slots), kept everything ``required`` (pinned), evicted at least ``asked`` tokens
        or everything unlocked, and nothing when nothing was asked. Returns tokens evicted."""
        after = read_tree(self.cache)
        lost = 0
        for namespace in set(before) | set(after):
            old, new = before.get(namespace, {}), after.get(namespace, {})
            for prefix, slots in new.items():
                assert old.get(prefix) == slots, f"{prefix} appeared or changed slots"
                if len(prefix) > self.PAGE:
                    assert prefix[: -self.PAGE] in new, f"survivors not prefix-closed at {prefix}"
            missing = required.get(namespace, set()) - set(new)
            assert not missing, f"pinned prefixes were evicted: {sorted(missing)[:3]}"
            lost += len(old) - len(new)
        evicted = lost * self.PAGE
        self.model.cached = after
        self.refresh_handles()  # before anything can cache the same tokens again
        if asked == 0:
            assert evicted == 0, "evicted although nothing was needed"
        if evicted < asked:
            stats = self.cache.stats().components["full"]
            assert stats.evictable == 0, f"evicted {evicted} < {asked} with entries left"
        return evicted

    def check_fresh_slots(self, slots: np.ndarray, owner: LeaseModel | None) -> None:
        """Slots just handed to a lease: whole aligned pages, in range, held by nobody else."""
        assert len(slots) % self.PAGE == 0
        assert ((slots >= 0) & (slots < self.CAPACITY)).all()
        if self.PAGE > 1 and len(slots):
            grid = slots.reshape(-1, self.PAGE)
            assert (grid[:, 0] % self.PAGE == 0).all()
            assert (grid == grid[:, :1] + np.arange(self.PAGE)).all()
        fresh = set(slots.tolist())
        assert len(fresh) == len(slots), "a slot handed out twice in one allocation"
        for pages in self.model.cached.values():
            for held in pages.values():
                assert fresh.isdisjoint(held), "handed out a slot the tree holds"
        for rec in self.model.leases:
            if rec is not owner:
                assert fresh.isdisjoint(rec.own), "handed out a slot another lease holds"
            else:
                assert fresh.isdisjoint(rec.allocated), "handed a lease a slot it already has"

    def model_insert(self, rec: LeaseModel, key_length: int) -> list[int]:
        """Apply an insert of the lease's first ``key_length`` tokens (page-aligned) to the
        model; return the lease slots that become duplicates (to be freed)."""
        pages = self.model.cached.setdefault(rec.namespace, {})
        freed: list[int] = []
        page = self.PAGE
        for end in range(page, key_length + 1, page):
            prefix = tuple(rec.tokens[:end])
            mine = tuple(rec.allocated[end - page : end])
            if prefix in pages:
                if end > rec.tree_owned:
                    freed.extend(mine)
                else:
                    assert pages[prefix] == mine, "lease disagrees with the tree it borrowed"
            else:
                assert end > rec.tree_owned, "borrowed prefix vanished from the tree"
                pages[prefix] = mine
        slots: list[int] = []
        for end in range(page, key_length + 1, page):
            slots.extend(pages[tuple(rec.tokens[:end])])
        rec.allocated[:key_length] = slots
        rec.tree_owned = key_length
        return freed

    def pick_lease(self, data: st.DataObject) -> LeaseModel:
        return data.draw(st.sampled_from(self.model.leases), label="lease")

    # ------------------------------------------------------------------ rules

    @initialize(policy=st.sampled_from(sorted(POLICIES)))
    def build(self, policy: str) -> None:
        self.cache = PrefixCache(
            CacheConfig(capacity=self.CAPACITY, page_size=self.PAGE, policy=policy)
        )

    @rule(data=st.data())
    def admit(self, data: st.DataObject) -> None:
        """Admit a request; often run it to completion at once so the cache fills up."""
        rec = self.do_admit(data)
        if rec is None:
            return
        then = data.draw(st.sampled_from(("keep", "finish", "extend+finish")), label="then")
        if then == "extend+finish":
            self.do_extend(rec, data)
        if then != "keep":
            self.do_finish(rec)

    @rule(data=st.data())
    def twins(self, data: st.DataObject) -> None:
        """Two requests with overlapping prompts run at once: whichever is inserted second
        finds (part of) its prompt cached already and must give back its duplicate slots."""
        ns_arg = self.draw_namespace(data)
        tokens = self.draw_tokens(data)
        cut = data.draw(st.integers(0, len(tokens)), label="shared")
        tail = data.draw(st.lists(st.integers(0, VOCAB - 1), max_size=8), label="tail")
        recs = [
            self.do_admit(data, tokens, ns_arg),
            self.do_admit(data, tokens[:cut] + tail, ns_arg),
        ]
        live = [rec for rec in recs if rec is not None]
        for rec in data.draw(st.permutations(live), label="order"):
            if data.draw(st.booleans(), label="commit first"):
                length = data.draw(st.integers(0, len(rec.tokens)), label="length")
                self.do_commit(rec, length)
            if data.draw(st.integers(0, 3), label="finish") != 0:
                self.do_finish(rec)

    @precondition(lambda self: self.model.cached)
    @rule(data=st.data())
    def admit_at_the_limit(self, data: st.DataObject) -> None:
        """Admit a prompt that extends a cached prefix by just about as many fresh pages as
        free + evictable (not counting the matched path, which the admit pins) allows: the
        room check must count exactly what the admission itself will lock."""
        namespace = data.draw(st.sampled_from(sorted(self.model.cached, key=repr)))
        ns_arg = None if namespace == (None, None) else namespace
        base = data.draw(st.sampled_from(sorted(self.model.cached[namespace])), label="base")
        cut = data.draw(st.integers(1, len(base) // self.PAGE), label="cut") * self.PAGE
        prefix = list(base[:cut])
        path = self.match_path(namespace, prefix, cut)
        pinned = self.pinned()
        unlocked_on_path = len(path - pinned.get(namespace, set())) * self.PAGE
        evictable = self.cached_tokens() - self.pinned_tokens() - unlocked_on_path
        room = self.cache.pool.available + evictable
        delta = data.draw(st.sampled_from((-self.PAGE, 0, 1, self.PAGE)), label="delta")
        self.fresh_token += 1  # a token no other prompt uses: the match stops at ``cut``
        tokens = prefix + [self.fresh_token] * max(0, room + delta)
        rec = self.do_admit(data, tokens, ns_arg)
        if rec is not None and data.draw(st.booleans(), label="finish"):
            self.do_finish(rec)

    def do_admit(
        self, data: st.DataObject, tokens: list[int] | None = None, ns_arg: Any = None
    ) -> LeaseModel | None:
        if tokens is None:
            ns_arg = self.draw_namespace(data)
            tokens = self.draw_tokens(data)
        namespace = normalize(ns_arg)
        priority = data.draw(st.integers(0, 3), label="priority")
        ttl = data.draw(st.none() | st.integers(0, 64), label="ttl")
        length, slots = self.model_match(namespace, tokens)
        needed = self.pages_for(len(tokens) - length)
        free = self.cache.pool.available
        required = self.pinned()
        path = self.match_path(namespace, tokens, length)
        unlocked_on_path = len(path - required.get(namespace, set())) * self.PAGE
        evictable = self.cached_tokens() - self.pinned_tokens() - unlocked_on_path
        required.setdefault(namespace, set()).update(path)
        before = self.copy_cached()
        snap = self.cache.snapshot()
        self.remember(tokens)
        try:
            lease = self.cache.admit(
                self.as_input(tokens, data), ns_arg, priority=priority, ttl=ttl
            )
        except OutOfSlotsError:
            assert free + evictable < needed, "refused an admit that fits"
            assert self.cache.snapshot() == snap, "a refused admit changed the cache"
            return None
        assert free + evictable >= needed, "admitted beyond free + evictable"
        evicted = self.absorb_eviction(before, required, max(0, needed - free))
        assert self.cache.pool.available == free + evicted - needed
        assert lease.state is LeaseState.ACTIVE
        assert lease.cached_length == length and lease.tree_owned == length
        assert lease.namespace == namespace
        assert lease.tokens.tolist() == tokens
        assert lease.slots[:length].tolist() == slots
        own = lease.allocated_slots[length:]
        assert len(own) == needed
        self.check_fresh_slots(own, None)
        rec = LeaseModel(lease, namespace, list(tokens), lease.allocated_slots.tolist(), length)
        self.model.leases.append(rec)
        return rec

    @precondition(lambda self: self.model.leases)
    @rule(data=st.data())
    def extend(self, data: st.DataObject) -> None:
        self.do_extend(self.pick_lease(data), data)

    def do_extend(self, rec: LeaseModel, data: st.DataObject) -> None:
        room = max(0, MAX_LEASE_TOKENS - len(rec.tokens))
        extra = data.draw(st.lists(st.integers(0, VOCAB - 1), max_size=min(8, room)))
        start, allocated = len(rec.tokens), len(rec.allocated)
        fresh = max(0, self.pages_for(start + len(extra)) - allocated)
        free = self.cache.pool.available
        evictable = self.cached_tokens() - self.pinned_tokens()
        required = self.pinned()
        before = self.copy_cached()
        snap = self.cache.snapshot()
        try:
            out = self.cache.extend(rec.lease, self.as_input(extra, data))
        except OutOfSlotsError:
            assert free + evictable < fresh, "refused an extend that fits"
            assert self.cache.snapshot() == snap, "a refused extend changed the cache"
            return
        assert free + evictable >= fresh
        evicted = self.absorb_eviction(before, required, max(0, fresh - free))
        assert self.cache.pool.available == free + evicted - fresh
        new = rec.lease.allocated_slots[allocated:]
        assert len(new) == fresh
        self.check_fresh_slots(new, rec)
        rec.tokens.extend(extra)
        rec.allocated.extend(new.tolist())
        assert out.tolist() == rec.allocated[start : start + len(extra)]
        self.remember(rec.tokens)

    @precondition(lambda self: self.model.leases)
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        rec = self.pick_lease(data)
        length = data.draw(st.none() | st.integers(0, len(rec.tokens)), label="length")
        self.do_commit(rec, None if length is None else numeric(data, length))

    def do_commit(self, rec: LeaseModel, length: Any) -> None:
        upto = len(rec.tokens) if length is None else int(length)
        key_length = upto // self.PAGE * self.PAGE
        free = self.cache.pool.available
        freed: list[int] = []
        if key_length > rec.tree_owned:
            freed = self.model_insert(rec, key_length)
        if length is None:
            result = self.cache.commit(rec.lease)
        else:
            result = self.cache.commit(rec.lease, length)
        assert result == rec.tree_owned
        assert self.cache.pool.available == free + len(freed)

    @precondition(lambda self: self.model.leases)
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        self.do_finish(self.pick_lease(data))

    def do_finish(self, rec: LeaseModel) -> None:
        key_length = len(rec.tokens) // self.PAGE * self.PAGE
        free = self.cache.pool.available
        freed: list[int] = []
        if key_length > rec.tree_owned:
            freed = self.model_insert(rec, key_length)
        freed.extend(rec.allocated[rec.tree_owned :])
        cached = self.cache.finish(rec.lease)
        assert cached == rec.tree_owned
        assert rec.lease.state is LeaseState.FINISHED and rec.lease.lock is None
        assert self.cache.pool.available == free + len(freed)
        self.model.leases.remove(rec)
        self.closed.append(rec.lease)

    @precondition(lambda self: self.model.leases)
    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        rec = self.pick_lease(data)
        free = self.cache.pool.available
        self.cache.abort(rec.lease)
        assert rec.lease.state is LeaseState.ABORTED and rec.lease.lock is None
        assert self.cache.pool.available == free + len(rec.own)
        self.model.leases.remove(rec)
        self.closed.append(rec.lease)

    @rule(data=st.data())
    def match(self, data: st.DataObject) -> None:
        ns_arg = self.draw_namespace(data)
        namespace = normalize(ns_arg)
        tokens = self.draw_tokens(data)
        length, slots = self.model_match(namespace, tokens)
        result = self.cache.match(self.as_input(tokens, data), ns_arg)
        assert result.length == length
        assert result.slots.tolist() == slots
        assert (result.node is None) == (length == 0)
        if result.node is not None:
            node = self.cache.tree.node(result.node)
            assert not np.shares_memory(result.slots, node.values[0])
            end = node_tokens(node)
            assert end[:length] == tuple(tokens[:length]) and len(end) >= length
            self.model.handles.append(Handle(result.node, namespace, end))
            del self.model.handles[:-16]

    @rule(num_tokens=st.integers(0, 48), data=st.data())
    def evict(self, num_tokens: int, data: st.DataObject) -> None:
        required = self.pinned()
        before = self.copy_cached()
        free = self.cache.pool.available
        evicted = self.cache.evict(numeric(data, num_tokens))["full"]
        assert self.absorb_eviction(before, required, num_tokens) == evicted
        assert self.cache.pool.available == free + evicted

    @precondition(lambda self: self.model.handles)
    @rule(data=st.data())
    def lock(self, data: st.DataObject) -> None:
        handle = data.draw(st.sampled_from(self.model.handles), label="handle")
        if handle.alive:
            receipt = self.cache.lock(handle.node_id)
            self.model.locks.append(UserLock(receipt, handle.namespace, handle.end))
            return
        snap = self.cache.snapshot()
        try:
            self.cache.lock(handle.node_id)
        except StaleHandleError:
            pass
        else:
            raise AssertionError(f"lock of stale handle {handle.node_id} succeeded")
        assert self.cache.snapshot() == snap

    @precondition(lambda self: self.model.locks)
    @rule(data=st.data())
    def unlock(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from(self.model.locks), label="lock")
        self.cache.unlock(user.receipt)
        self.model.locks.remove(user)
        self.dead_locks.append(user.receipt)

    @precondition(lambda self: self.dead_locks)
    @rule(data=st.data())
    def unlock_dead(self, data: st.DataObject) -> None:
        receipt = data.draw(st.sampled_from(self.dead_locks), label="dead lock")
        snap = self.cache.snapshot()
        try:
            self.cache.unlock(receipt)
        except LockError:
            pass
        else:
            raise AssertionError("a released (or reset) lock was unlocked again")
        assert self.cache.snapshot() == snap

    @precondition(lambda self: self.closed)
    @rule(data=st.data())
    def use_closed_lease(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.closed), label="closed lease")
        op = data.draw(st.sampled_from(("finish", "abort", "extend", "commit")), label="op")
        snap = self.cache.snapshot()
        try:
            if op == "extend":
                self.cache.extend(lease, [1, 2])
            else:
                getattr(self.cache, op)(lease)
        except LeaseError:
            pass
        else:
            raise AssertionError(f"{op} on a {lease.state.value} lease succeeded")
        assert self.cache.snapshot() == snap

    @rule(data=st.data())
    def bad_call(self, data: st.DataObject) -> None:
        """A call the cache must refuse, whatever state it is in, without changing a thing."""
        cache = self.cache
        choices = ["tokens", "namespace", "evict", "unlock", "too-long"]
        if self.model.leases:
            choices += ["commit", "extend"]
        kind = data.draw(st.sampled_from(choices), label="bad call")
        bad_tokens = data.draw(
            st.sampled_from([[1.5], [-1], [2**32], None, [[1, 2]], np.array([True])]),
            label="bad tokens",
        )
        calls: dict[str, tuple[Any, type[Exception]]] = {
            "tokens": (lambda: cache.admit(bad_tokens), InvalidTokensError),
            "namespace": (
                lambda: cache.match([1, 2, 3, 4], ("a", "b", "c")),
                InvalidNamespaceError,
            ),
            "evict": (lambda: cache.evict(-1), InvalidArgumentError),
            "unlock": (lambda: cache.unlock(object()), LockError),
        }
        if kind == "too-long":  # more than the whole pool, sharing a cached prefix
            bases = self.cached_sequences() or [()]
            base = list(data.draw(st.sampled_from(bases), label="base"))
            prompt = base + [0] * (self.CAPACITY + self.PAGE)
            calls[kind] = (lambda: cache.admit(prompt), OutOfSlotsError)
        if self.model.leases:
            lease = self.pick_lease(data).lease
            too_long = lease.num_tokens + 1
            calls["commit"] = (lambda: cache.commit(lease, too_long), InvalidArgumentError)
            calls["extend"] = (lambda: cache.extend(lease, bad_tokens), InvalidTokensError)
        call, error = calls[kind]
        assert_refused(cache, error, call)

    @rule(roll=st.integers(0, 11))
    def reset(self, roll: int) -> None:
        if roll != 7:  # reset only now and then
            return
        self.cache.reset()
        for rec in self.model.leases:
            assert rec.lease.state is LeaseState.INVALIDATED
            self.closed.append(rec.lease)
        for handle in self.model.handles:
            handle.alive = False
        self.dead_locks.extend(user.receipt for user in self.model.locks)
        self.model = Model(handles=self.model.handles)
        assert self.cache.pool.available == self.CAPACITY

    # ------------------------------------------------------------------ invariants

    @invariant()
    def consistent(self) -> None:
        cache, model = self.cache, self.model
        cache.check_invariants()
        assert read_tree(cache) == model.cached, "tree differs from the model"

        held = [slot for pages in model.cached.values() for s in pages.values() for slot in s]
        own_total = 0
        for rec in model.leases:
            lease = rec.lease
            assert lease.state is LeaseState.ACTIVE
            assert lease.tokens.tolist() == rec.tokens
            assert lease.allocated_slots.tolist() == rec.allocated
            assert lease.tree_owned == rec.tree_owned
            assert len(rec.allocated) == self.pages_for(len(rec.tokens))
            assert lease.own_slots.tolist() == rec.own
            length, slots = self.model_match(rec.namespace, rec.tokens[: rec.tree_owned])
            assert length == rec.tree_owned and rec.allocated[:length] == slots
            held.extend(rec.own)
            own_total += len(rec.own)
        assert len(set(held)) == len(held), "a slot is held twice (tree/leases)"
        assert all(0 <= slot < self.CAPACITY for slot in held)
        if held:
            assert cache.pool.is_allocated(np.array(held, dtype=np.int64)).all()

        stats = cache.stats()
        full = stats.components["full"]
        assert cache.pool.available == stats.available
        assert stats.available + full.cached + stats.held_by_requests == self.CAPACITY
        assert stats.available + len(held) == self.CAPACITY
        assert full.cached == self.cached_tokens()
        assert stats.held_by_requests == own_total
        assert full.protected == self.pinned_tokens()
        assert full.evictable == full.cached - full.protected
        assert stats.active_leases == len(model.leases) == len(cache.leases())
        assert stats.nodes == len(cache.tree.nodes) - len(cache.tree.roots)

        self.refresh_handles()
        for handle in model.handles:
            node = cache.tree.nodes.get(handle.node_id)
            assert (node is not None) == handle.alive, f"handle {handle.node_id} liveness"
            if node is not None:
                assert node_tokens(node) == handle.end


SETTINGS = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

NAMESPACES = (None, (None, None), ("lora-a", 0), (7, "tenant-b"))


class Page4Machine(PrefixCacheMachine):
    PAGE = 4
    CAPACITY = 128


class Page1NamespacedMachine(PrefixCacheMachine):
    NAMESPACES = NAMESPACES


class Page4NamespacedMachine(PrefixCacheMachine):
    PAGE = 4
    CAPACITY = 128
    NAMESPACES = NAMESPACES


TestPage1 = PrefixCacheMachine.TestCase
TestPage1.settings = SETTINGS
TestPage4 = Page4Machine.TestCase
TestPage4.settings = SETTINGS
TestPage1Namespaced = Page1NamespacedMachine.TestCase
TestPage1Namespaced.settings = SETTINGS
TestPage4Namespaced = Page4NamespacedMachine.TestCase
TestPage4Namespaced.settings = SETTINGS
