"""What the kit's machine checks after every step, besides ``check_invariants()``: the lock
order the specs declare, slot ownership across tree, leases and caller-held allocations,
the ledgers against the model, locked values and protected prefixes, and useless leaves."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis.stateful import invariant

from ..cache import LeaseState
from .housekeeping import Housekeeping
from .reference import Prefix, Reference, prefix_of


class Audited(Housekeeping):
    """The complete machine: every rule, then this audit after each step."""

    @invariant()
    def audit(self) -> None:
        if self.cache is None:
            return
        self.c.check_invariants()
        self.check_lock_order()
        model = self.ref()
        self.check_slots()
        components = self.c.stats().components
        for index, name in enumerate(self.names):
            ledger = components[name]
            assert ledger.cached == model.cached[index], (name, ledger, model.cached)
            assert ledger.evictable + ledger.protected == ledger.cached
        self.check_locked_values(model)
        self.check_leaves()
        for guard in [*self.guards.values(), *(guard for _, guard in self.receipts)]:
            walk = model.walk(guard.namespace, guard.prefix)
            assert tuple(walk.columns[0][: len(guard.prefix)]) == guard.primary, guard
            if guard.usable:
                assert model.usable_at(guard.namespace, guard.prefix), guard
        self.locked = self.locked_values()

    def check_lock_order(self) -> None:
        """On every node no lock count is negative, and each component's is at most that
        of every component its spec says it depends on."""
        specs = self.PLAN.specs
        depends = [[self.names.index(name) for name in spec.depends_on(specs)]
                   for spec in specs]
        for node in self.c.tree.nodes.values():
            counts = node.locks
            assert all(count >= 0 for count in counts), f"node {node.id} locks {counts}"
            for index, needs in enumerate(depends):
                for other in needs:
                    assert counts[index] <= counts[other], \
                        f"node {node.id} locks {counts}: {self.names[index]} > {self.names[other]}"

    def check_slots(self) -> None:
        """Per pool: what the tree, the leases and the caller-held allocations hold is
        exactly what is allocated, no slot twice."""
        held: list[list[int]] = [[] for _ in self.names]
        for node in self.c.tree.nodes.values():
            for index, value in enumerate(node.values):
                if value is not None:
                    held[index] += value.tolist()
        for lease in self.leases:
            assert lease.state is LeaseState.ACTIVE
            for index in self.tokenwise:
                held[index] += lease.own_slots_of(self.names[index]).tolist()
            if self.state is not None:
                assert lease.state_slot is not None
                held[self.state] += [lease.state_slot, *lease.checkpoints.values()]
        for allocation, _ in self.allocations:
            for index, part in enumerate(allocation.parts):
                held[index] += part.tolist()
        assert len(self.c.leases()) == len(self.leases)
        for name, pool, slots in zip(self.names, self.c.pools.pools, held):
            assert len(set(slots)) == len(slots), f"{name}: a slot is owned twice"
            every = np.arange(pool.capacity, dtype=np.int64)
            allocated = every[pool.is_allocated(every)].tolist()
            assert sorted(slots) == allocated, f"{name}: leaked or foreign slots"
            assert pool.available + len(slots) == pool.capacity

    def check_leaves(self) -> None:
        """An unlocked leaf can end a prefix for every component: it holds the component's
        value, or (per-token) some page boundary inside it has an empty window."""
        page = self.page
        for node in self.c.tree.nodes.values():
            if node.parent is None or node.children or any(node.locks):
                continue
            for index, rule in enumerate(self.declared):
                if node.values[index] is not None:
                    continue
                first = node.start + page
                empty = rule.per_token and any(
                    rule.window_start(end) >= end for end in range(first, node.end + 1, page))
                assert empty, f"unlocked leaf {node} lacks {rule.name} and is useless"

    def locked_values(self) -> list[tuple[Any, Prefix, int, int, tuple[int, ...]]]:
        """(namespace, prefix to the node's end, component, node start, slots) of every
        value a lock protects."""
        found = []
        for node in self.c.tree.nodes.values():
            if node.parent is None:
                continue
            for index, value in enumerate(node.values):
                if value is not None and node.locks[index]:
                    found.append((node.namespace, prefix_of(node), index, node.start,
                                  tuple(value.tolist())))
        return found

    def check_locked_values(self, model: Reference) -> None:
        """Every value locked before the step is still cached at the same positions, with
        the same slots (a split may have cut its node in two)."""
        for namespace, prefix, index, start, slots in self.locked:
            walk = model.walk(namespace, prefix)
            assert walk.branch == len(prefix), f"locked prefix {prefix} is gone"
            if self.declared[index].per_token:
                assert tuple(walk.columns[index][start : len(prefix)]) == slots, \
                    f"a locked {self.names[index]} value changed"
            else:
                assert (walk.states[index].get(len(prefix)),) == slots, "a locked state is gone"
