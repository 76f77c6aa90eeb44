"""Rules of the kit's machine outside leases: the caller-held path (allocate / insert /
release), eviction by component name, explicit locks, and reset."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from ..cache import Allocation, LeaseState
from ..errors import LeaseError, LockError, OutOfSlotsError
from .lifecycle import LeaseRules
from .machine import VOCAB
from .reference import prefix_of


class Housekeeping(LeaseRules):
    """allocate / insert / release, evict, lock / unlock, reset."""

    # ------------------------------------------------------------------ caller-held slots

    @rule(data=st.data())
    def allocate(self, data: st.DataObject) -> None:
        num_tokens = data.draw(st.integers(0, 2 * self.page + 4), label="tokens")
        state = self.state is not None and data.draw(st.booleans(), label="state")
        evict = data.draw(st.booleans(), label="evict")
        before = self.c.snapshot()
        found = self.attempt(self.c.allocate, num_tokens, state=state, evict=evict)
        if isinstance(found, OutOfSlotsError):
            return
        if found is None:
            assert not evict and self.c.snapshot() == before
            return
        self.changed()
        for index, part in enumerate(found.parts):
            size = self.c.pages_for(num_tokens) if index in self.tokenwise else int(state)
            assert len(part) == size, (self.names[index], len(part), size)
        self.allocations.append((found, num_tokens))

    def pick_allocation(self, data: st.DataObject) -> tuple[Allocation, int]:
        index = data.draw(st.integers(0, len(self.allocations) - 1), label="allocation")
        found: tuple[Allocation, int] = self.allocations.pop(index)
        return found

    @precondition(lambda self: bool(self.allocations))
    @rule(data=st.data())
    def insert(self, data: st.DataObject) -> None:
        """Insert tokens filling the allocation's pages (a prompt from the model, so the
        insert often runs through cached and tombstoned nodes)."""
        allocation, num_tokens = self.pick_allocation(data)
        space = self.namespace(data)
        pages = self.c.pages_for(num_tokens)
        length = data.draw(st.integers(max(0, pages - self.page + 1), pages), label="length")
        padding = data.draw(st.lists(st.integers(0, VOCAB), min_size=length,
                                     max_size=length), label="padding")
        tokens = (self.prompt(data, space) + padding)[:length]
        key_length = length - length % self.page
        stated = self.state is None or allocation.state is not None
        expected = key_length if stated else 0
        cached = self.c.insert(tokens, allocation, space)
        self.changed()
        assert cached == expected
        walk = self.ref().walk(space, tokens[:cached])
        assert walk.branch == cached
        for index in self.tokenwise:
            assert None not in walk.columns[index], self.names[index]
        if self.state is not None and cached:
            assert cached in walk.states[self.state]
        self.remember(tokens)

    @precondition(lambda self: bool(self.allocations))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        allocation, _ = self.pick_allocation(data)
        available = self.available()
        self.c.release(allocation)
        self.changed()
        for index, part in enumerate(allocation.parts):
            assert self.available()[index] == available[index] + len(part), self.names[index]

    # ------------------------------------------------------------------ eviction, locks, reset

    @rule(data=st.data())
    def evict(self, data: st.DataObject) -> None:
        """Evict by component name; an unmet budget leaves nothing unlocked of it."""
        budgets = {}
        for name in self.names:
            budget = data.draw(st.integers(0, 4 * self.page), label=f"{name} budget")
            budgets[name] = 10**6 if budget == 4 * self.page else budget
        available = self.available()
        freed = self.c.evict(**budgets)
        self.changed()
        assert list(freed) == self.names
        after = self.available()
        for index, name in enumerate(self.names):
            assert after[index] == available[index] + freed[name], name  # a slot a unit
            if freed[name] < budgets[name]:
                unlocked = [node.id for node in self.c.tree.nodes.values()
                            if node.values[index] is not None and not node.locks[index]]
                assert not unlocked, f"{name}: budget {budgets[name]} unmet, {unlocked} left"

    @rule(data=st.data())
    def lock(self, data: st.DataObject) -> None:
        space = self.namespace(data)
        tokens = self.prompt(data, space)
        found = self.c.match(tokens, space)
        assert found.length == self.ref().usable(space, tokens)[0]
        if found.node is None:
            return
        prefix = prefix_of(self.c.tree.node(found.node))
        column = self.ref().walk(space, prefix).columns[0]
        receipt = self.c.lock(found.node)
        self.changed()
        assert None not in column
        primary = [slot for slot in column if slot is not None]
        self.receipts.append((receipt, self.guard_for(space, prefix, primary)))

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
        self.allocations = []
        stats: Any = self.c.stats().components
        assert all(s.pool_available == s.pool_capacity for s in stats.values())
