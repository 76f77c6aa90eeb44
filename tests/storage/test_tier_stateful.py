"""Stateful test (hypothesis, seeded) of two caches ("engines") sharing one FileStorage
directory, with page files deleted or damaged under them.

Each run draws the components (FULL, FULL+SWA, FULL+MAMBA), the host write policy, the
wait policy, the copy engine's delays and failure rate (failed backups and load-backs),
the pool sizes (small: eviction, demotion, host eviction and no-room are frequent), a size
cap on the store (each engine's cleanup then removes pages under the other) and requests
the second engine served first. Rules: admit with load-back, finish (the engine
computes what was not cached, MAMBA checkpoints included), a whole request, abort, device
and host eviction, poll, wait (all, or one lease), prefetch, reset, and the faults: a page
file of any component deleted, truncated, or replaced by another page's. After every
step, on both engines: ``check_invariants()``, every ready lease's cached prefix holds
its tokens' rows (and the state it copies), every value of the tree on either tier holds
its tokens' rows or state (restores from L3 included), and the store counts only faults
that were injected. At teardown each
engine aborts its leases and closes: nothing is held, and a reset leaves the pools whole.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from radixkv import NumpyCopyConfig
from radixkv.cache import Lease, LeaseState
from radixkv.errors import OutOfSlotsError
from radixkv.host import WRITE_POLICIES
from radixkv.storage import FileStorage, FileStorageConfig

from .fault_support import (
    closed,
    computed,
    faults,
    full_keys,
    lease_rows_right,
    reset_whole,
    tree_rows_right,
)
from .tier_support import PAGE, SHAPES, Engine, engine

STEMS = [[stem * 1000 + i for i in range(40)] for stem in (1, 2, 3)]
"""Prompts are prefixes of these (so they share pages), plus a partial page."""
MAX_LEASES = 2
which = st.integers(0, 1)
prompts = st.builds(lambda stem, pages, extra: STEMS[stem][: pages * PAGE + extra],
                    st.integers(0, 2), st.integers(1, 9), st.integers(0, 3))
pick = st.integers(0, MAX_LEASES - 1)


class TwoEngines(RuleBasedStateMachine):
    """Two caches over one FileStorage directory; see the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="radixkv-l3-stateful-"))
        self.engines: list[Engine] = []
        self.leases: list[list[Lease]] = [[], []]
        self.injected: set[str] = set()
        """Fault kinds the test caused: the only ones the store may count."""

    @initialize(shape=st.sampled_from(sorted(SHAPES)),
                write=st.sampled_from(sorted(WRITE_POLICIES)),
                wait=st.sampled_from(("best_effort", "wait_complete", "timeout")),
                seed=st.integers(0, 2**16), delay=st.integers(0, 2),
                failures=st.sampled_from((0.0, 0.0, 0.2)),
                cap=st.sampled_from((None, None, 4000)),
                capacity=st.sampled_from((64, 128)), host=st.sampled_from((48, 96, 256)),
                warm=st.lists(prompts, max_size=6))
    def setup(self, shape: str, write: str, wait: str, seed: int, delay: int,
              failures: float, cap: int | None, capacity: int, host: int,
              warm: list[list[int]]) -> None:
        if cap is not None:  # each engine's LRU cleanup removes pages under the other
            self.injected.add("missing")
        for index in range(2):
            copies = NumpyCopyConfig(delay_polls=delay, seed=seed + index,
                                     failure_rate=failures)
            self.engines.append(engine(
                FileStorage(FileStorageConfig(root=self.root, capacity_bytes=cap)), shape,
                capacity=capacity, host_capacity=host, write_policy=write, copies=copies,
                wait_policy=wait, timeout_s=0.05))
        for tokens in warm:  # the second engine served these: their pages are in the store
            self.serve(1, tokens)
        storage = self.engines[1].cache.storage
        assert storage is not None
        storage.settle()

    # ------------------------------------------------------------------ requests

    @rule(side=which, tokens=prompts)
    def admit(self, side: int, tokens: list[int]) -> None:
        if len(self.leases[side]) >= MAX_LEASES:
            return
        try:
            lease = self.engines[side].cache.admit(tokens, load_back=True)
        except OutOfSlotsError:
            return  # refused with nothing changed: the invariant audits the cache
        self.leases[side].append(lease)

    @rule(side=which, tokens=prompts)
    def serve(self, side: int, tokens: list[int]) -> None:
        """A whole request: admit, wait for its copies, compute, finish, poll."""
        count = len(self.leases[side])
        self.admit(side, tokens)
        if len(self.leases[side]) == count:
            return
        lease = self.leases[side][-1]
        self._changed(side, self.engines[side].cache.wait(lease))
        self._finish(side, lease)
        self.poll(side)

    @rule(side=which, index=pick)
    def finish(self, side: int, index: int) -> None:
        lease = self._lease(side, index)
        if lease is not None:
            self._finish(side, lease)

    def _finish(self, side: int, lease: Lease) -> None:
        if not self._live(lease) or not lease.ready:
            return
        made = self.engines[side]
        computed(made, lease)
        made.cache.finish(lease)
        self.leases[side].remove(lease)

    @rule(side=which, index=pick)
    def abort(self, side: int, index: int) -> None:
        lease = self._lease(side, index)
        if lease is not None and self._live(lease):
            self.engines[side].cache.abort(lease)
            self.leases[side].remove(lease)

    @rule(side=which, index=pick)
    def wait_for(self, side: int, index: int) -> None:
        lease = self._lease(side, index)
        if lease is not None and self._live(lease):
            self._changed(side, self.engines[side].cache.wait(lease))
            assert lease.ready or lease.state is LeaseState.FAILED

    @staticmethod
    def _live(lease: Lease) -> bool:
        """Active: a lease a failed load-back ended is dropped once poll/wait reports it."""
        return lease.state is LeaseState.ACTIVE

    def _lease(self, side: int, index: int) -> Lease | None:
        leases = self.leases[side]
        return leases[index % len(leases)] if leases else None

    def _changed(self, side: int, leases: list[Lease]) -> None:
        """What poll / wait reported: leases now ready, or failed by a load-back."""
        for lease in leases:
            if lease.state is LeaseState.FAILED:
                self.leases[side].remove(lease)
            else:
                assert lease.state is LeaseState.ACTIVE and lease.ready

    # ------------------------------------------------------------------ the cache

    @rule(side=which)
    def poll(self, side: int) -> None:
        self._changed(side, self.engines[side].cache.poll())

    @rule(side=which)
    def wait_all(self, side: int) -> None:
        self._changed(side, self.engines[side].cache.wait())

    @rule(side=which, tokens=prompts)
    def prefetch(self, side: int, tokens: list[int]) -> None:
        self.engines[side].cache.prefetch(tokens)

    @rule(side=which, amount=st.sampled_from((PAGE, 4 * PAGE, 1000)))
    def evict(self, side: int, amount: int) -> None:
        self.engines[side].cache.evict(full=amount)

    @rule(side=which, amount=st.sampled_from((PAGE, 4 * PAGE, 1000)))
    def evict_host(self, side: int, amount: int) -> None:
        cache = self.engines[side].cache
        assert cache.host is not None
        budgets = [amount if c.per_token else 1 for c in cache.tree.components]
        cache.host.evict_host(budgets)

    @rule(side=which)
    def reset(self, side: int) -> None:
        self.engines[side].cache.reset()
        self.leases[side] = []  # a reset ends every lease

    # ------------------------------------------------------------------ faults

    def _pages(self) -> list[Path]:
        """The page files in the store now."""
        return sorted(self.root.glob("[0-9a-f][0-9a-f]/*"))

    @rule(choice=st.integers(0, 2**16))
    def delete_page(self, choice: int) -> None:
        files = self._pages()
        if files:
            name = files[choice % len(files)].name
            FileStorage(FileStorageConfig(root=self.root)).remove([name])
            self.injected.add("missing")

    @rule(choice=st.integers(0, 2**16), other=st.integers(0, 2**16), truncate=st.booleans())
    def damage_page(self, choice: int, other: int, truncate: bool) -> None:
        files = self._pages()
        if files:
            self._damage(files[choice % len(files)], files, other, truncate)

    @rule(side=which, tokens=prompts, choice=st.integers(0, 2**16),
          other=st.integers(0, 2**16), truncate=st.booleans())
    def damage_then_serve(self, side: int, tokens: list[int], choice: int, other: int,
                          truncate: bool) -> None:
        """Damage a stored page of ``tokens`` (any component), then serve them: the page
        is read unless the engine holds it already."""
        names = {key for c in self.engines[0].device for key in full_keys(tokens, c)}
        files = self._pages()
        mine = [f for f in files if f.name in names]
        if mine:
            self._damage(mine[choice % len(mine)], files, other, truncate)
        self.serve(side, tokens)

    def _damage(self, target: Path, files: list[Path], other: int, truncate: bool) -> None:
        layout = target.name.split("-")[0]
        same = [f for f in files if f != target and f.name.split("-")[0] == layout]
        try:
            blob = target.read_bytes()
            # whole, of this component's size, but another page's
            swapped = None if truncate or not same else same[other % len(same)].read_bytes()
        except FileNotFoundError:  # the store's writer thread evicted it since the listing
            return
        target.write_bytes(blob[: len(blob) // 2] if swapped is None else swapped)
        self.injected.add("corrupt")

    # ------------------------------------------------------------------ checks

    @invariant()
    def every_byte_is_right(self) -> None:
        for side, made in enumerate(self.engines):
            made.audited()
            for lease in self.leases[side]:
                if self._live(lease) and lease.ready:
                    lease_rows_right(made, lease)
            tree_rows_right(made)
            assert set(faults(made)) <= self.injected, (faults(made), self.injected)

    def teardown(self) -> None:
        try:
            for side, made in enumerate(self.engines):
                for lease in self.leases[side]:
                    if self._live(lease):
                        made.cache.abort(lease)
                made.cache.wait()
                made.audited()
                closed(made)
                reset_whole(made)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def test_two_engines_on_one_store_with_damaged_pages_never_read_wrong_bytes() -> None:
    run_state_machine_as_test(TwoEngines, settings=settings(
        max_examples=120, stateful_step_count=40, deadline=None, derandomize=True))
