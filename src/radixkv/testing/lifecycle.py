"""Rules of the kit's machine for running leases: commit, checkpoint, slide_window, finish
and abort, each checked against what the components declare (DESIGN §3: an insert is cut
at the state component's last checkpoint, and where its whole new tail already left a
window; the tree holds live values wherever the request still held its slots)."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from ..cache import Lease, LeaseState
from ..errors import OutOfSlotsError
from .machine import MAX_PROMPT, Machine


class LeaseRules(Machine):
    """The life-cycle rules after admission."""

    def expected_insert(self, lease: Lease, length: int) -> int:
        """How many tokens the tree holds for ``lease`` after inserting its first
        ``length``: whole pages, cut (to a fixpoint, as each cut may allow another) by the
        state component at its last checkpoint and by a windowed component whose window
        the whole new tail already left."""
        key_length = length - length % self.page
        owned = lease.tree_owned
        if key_length <= owned:
            return owned
        dropped = {i: min(lease.dropped_of(self.names[i]), key_length) for i in self.tokenwise}
        checkpoints = lease.checkpoints
        limit = key_length
        while True:
            cuts = [limit]
            for index, dropped_at in dropped.items():
                if dropped_at >= limit and self.declared[index].window_start(limit) < limit:
                    cuts.append(min(owned, limit))
            if self.state is not None:
                cuts.append(max([owned, *(p for p in checkpoints if p <= limit)]))
            if min(cuts) == limit:
                return max(owned, limit)
            limit = min(cuts)

    def check_inserted(self, lease: Lease, tokens: list[int], held_from: dict[int, int],
                       cached: int, saved: dict[int, int]) -> None:
        """After commit/finish: the cached prefix is there, the primary live on all of it
        (the lease's slots where it is still active), every per-token component live where
        the lease still held its slots, and a state at every checkpoint the insert took."""
        walk = self.ref().walk(lease.namespace, tokens[:cached])
        assert walk.branch == cached
        assert None not in walk.columns[0]
        if lease.state is LeaseState.ACTIVE:
            assert lease.slots[:cached].tolist() == walk.columns[0]
        for index, start in held_from.items():
            column = walk.columns[index][start:cached]
            assert None not in column, (self.names[index], start, cached, column)
        if self.state is not None:
            assert all(p in walk.states[self.state] for p in saved if p <= cached)

    def held_from(self, lease: Lease) -> dict[int, int]:
        """Per per-token component, where the lease's own live slots begin."""
        return {i: max(lease.tree_owned, lease.dropped_of(self.names[i]))
                for i in self.tokenwise}

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        lease = self.pick_lease(data)
        low = data.draw(st.sampled_from([0, lease.tree_owned]), label="low")
        length = data.draw(st.integers(low, lease.num_tokens), label="length")
        expected = self.expected_insert(lease, length)
        held_from, saved = self.held_from(lease), lease.checkpoints
        tokens = lease.tokens.tolist()
        cached = self.c.commit(lease, length)
        self.changed()
        assert cached == lease.tree_owned == expected
        assert lease.checkpoints == {p: s for p, s in saved.items() if p > cached}
        self.check_inserted(lease, tokens, held_from, cached, saved)
        self.remember(tokens[:MAX_PROMPT])
        if cached:
            assert lease.lock is not None
            self.guards[lease.id] = self.guard_for(
                lease.namespace, tuple(tokens[:cached]), lease.slots[:cached].tolist())

    @precondition(lambda self: bool(self.leases) and self.state is not None)
    @rule(data=st.data())
    def checkpoint(self, data: st.DataObject) -> None:
        lease = self.pick_lease(data)
        free = [p for p in range(lease.tree_owned + 1, lease.num_tokens + 1)
                if p % self.page == 0 and p not in lease.checkpoints]
        if not free:
            return
        hinted = [p for p in lease.checkpoint_hints if p in free]
        use_hints = data.draw(st.booleans(), label="hinted")
        choices = hinted if hinted and use_hints else free
        position = data.draw(st.sampled_from(choices), label="position")
        slot = self.attempt(self.c.checkpoint, lease, position)
        if isinstance(slot, OutOfSlotsError):
            return
        self.changed()
        assert lease.checkpoints[position] == slot

    @precondition(lambda self: bool(self.leases) and bool(self.windowed))
    @rule(data=st.data())
    def slide_window(self, data: st.DataObject) -> None:
        """Each windowed component hands back the lease's own pages wholly before the
        window of the computed prefix (whole pages)."""
        lease = self.pick_lease(data)
        computed = data.draw(st.integers(0, lease.num_tokens), label="computed")
        cacheable = computed - computed % self.page
        expected: dict[int, tuple[int, int]] = {}
        for index in self.windowed:
            before = lease.dropped_of(self.names[index])
            dropped = self.declared[index].window_start(cacheable)
            dropped -= dropped % self.page
            held_from = max(lease.tree_owned, before)
            released = max(0, dropped - held_from) if dropped > before else 0
            expected[index] = (released, max(before, dropped))
        available = self.available()
        assert self.c.slide_window(lease, computed) == sum(r for r, _ in expected.values())
        self.changed()
        after = self.available()
        for index, (released, dropped) in expected.items():
            assert after[index] == available[index] + released, self.names[index]
            assert lease.dropped_of(self.names[index]) == dropped, self.names[index]

    def available(self) -> list[int]:
        """Free slots per component pool, in tree order."""
        found = self.c.stats().components
        return [found[name].pool_available for name in self.names]

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
        held_from, saved = self.held_from(lease), lease.checkpoints
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
