"""HostTierController: the host tier's pools, copies and stepwise eviction for a cache.

It carries out what the tree decides (:mod:`radixkv.core.copy_plans`): allocates host or device
slots, places the destination values on the nodes, locks the nodes, submits the copies to
the engine, and on each acknowledgement unlocks them (or, for a failed copy, takes the
placed values back and frees them). No copy ever runs inside a tree operation. Every method
mutates the tree and pools as it says; costs are O(nodes copied x components) plus the
engine's own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

import numpy as np

from ..core.copy_plans import Planned
from ..core.events import KVEvent
from ..core.keys import Namespace
from ..core.node import Node
from ..core.tiers import DEVICE, HOST, PRIMARY
from ..core.tree import TreeCore
from ..core.types import InFlight, Lock
from ..memory import SlotPool, SlotPoolConfig
from .copy_engine import Completion, Copy, CopyEngine
from .counters import TierCounters
from .engine_calls import CopyRefused, EngineCalls, plan_batch
from .host_audit import check_host
from .host_config import HostTier, WritePolicy
from .host_stats import HostStats, host_stats
from .parts import CopyListener, DeviceSlots, HostSink


class CopyRecord(InFlight):
    """One submitted batch: what the tree tracks, plus the locks that keep its nodes."""

    __slots__ = ("doubtful", "locks", "units")

    def __init__(self, ticket: int, tier: int, locks: list[Lock], units: list[int]) -> None:
        super().__init__(ticket, tier)
        self.locks = locks
        self.units = units
        """Per component, the ledger units the batch copies."""
        self.doubtful = False
        """The engine gave this ticket to another batch too: a report of it may be the
        other batch's, so it counts as failed."""


class HostTierController:
    """The host tier of one cache (built by the cache from ``CacheConfig.host``): the first
    of its :class:`~radixkv.cache.lower_tier.LowerTier` s, whose verbs say what each call
    does (the ones below without a contract of their own are those)."""

    name = "host"

    def __init__(self, config: HostTier, shapes: Sequence[tuple[str, int, bool]],
                 tree: TreeCore, device: DeviceSlots, engine: CopyEngine, *,
                 listener: CopyListener, sink: HostSink | None = None) -> None:
        """``shapes``: per component (name, page size of its pool, per_token)."""
        self.config, self.tree, self.device, self.engine = config, tree, device, engine
        self.listener = listener
        """Told of each batch before it is applied (:class:`CopyListener`)."""
        self.sink = sink
        """Told of each acknowledged backup and each host value host eviction drops
        (:class:`HostSink`); ``None``: nothing below the host tier."""
        self.pools = [SlotPool(SlotPoolConfig(
            capacity=config.capacity_of(name, per_token), page_size=page, name=f"host {name}"))
            for name, page, per_token in shapes]
        self.records: dict[int, CopyRecord] = {}
        policy = config.policy
        self.write_back = policy is WritePolicy.WRITE_BACK
        """Whether a node is backed up only when device eviction would drop a value the
        host lacks (stepwise eviction), rather than at a count of uses."""
        self.threshold = policy.backup_uses
        """The uses at which a node is backed up; ``None`` under write-back."""
        # by the policy's name, once: under write-back a match or insert counts nothing
        self.prepare_store = self._uses_ignored if self.write_back else self._count_uses
        self.due: dict[int, Node] = {}
        """Nodes whose uses reached the threshold, to back up at the next :meth:`complete_store`."""
        self.tier = tree.tiers[HOST]
        """The tree's host tier (where this controller's values sit in a node)."""
        self.host_primary = self.tier.slot(PRIMARY)
        self.counters = TierCounters(len(shapes))
        self._skip: set[int] = set()
        self.calls = EngineCalls(engine, self.counters, self.records, config.clock)

    # ------------------------------------------------------------------ backups

    prepare_store: Callable[[Iterable[Node]], None]
    """``prepare_store(nodes)``: nodes were hit by a match or stored by an insert (its first
    use: ``1 + hits`` counts it already); those whose uses reached the threshold become
    due for a backup (none under write-back). O(nodes)."""

    def _uses_ignored(self, nodes: Iterable[Node]) -> None:
        """:attr:`prepare_store` under write-back."""

    def _count_uses(self, nodes: Iterable[Node]) -> None:
        """:attr:`prepare_store` under a write-through policy."""
        threshold = self.threshold
        assert threshold is not None  # only write-back has none
        host = self.host_primary
        for node in nodes:
            if node.hits + 1 >= threshold and node.values[host] is None:
                self.due[node.id] = node

    def complete_store(self) -> None:
        """Back up every due node still live (one batch). A node left out because a backup
        is still in flight above it stays due, for a call after that copy lands."""
        if self.due:
            nodes = list(self.due.values())
            self.due.clear()
            self.backup(nodes)
            host, tree = self.host_primary, self.tree
            for node in nodes:
                if tree.nodes.get(node.id) is node and node.values[host] is None \
                        and tree.copies.copying_above(node, HOST):
                    self.due[node.id] = node

    def backup(self, nodes: Sequence[Node]) -> CopyRecord | None:
        """Copy the device values ``nodes`` (and their ancestors, see
        :meth:`CopyPlanner.backup_plan`) lack on the host; ``None`` when there is nothing to
        copy or no host room even after host eviction (then nothing changed but the host
        eviction)."""
        planned = self.tree.copies.backup_plan(nodes)
        if not planned:
            return None
        sizes = self._sizes(planned)
        if not self._host_room(sizes, planned):
            self.counters.skipped_backups += 1
            return None
        slots = [pool.alloc(size) if size else None for pool, size in zip(self.pools, sizes)]
        return self._submit(planned, sizes, slots, HOST)

    def _host_room(self, sizes: Sequence[int], planned: Planned) -> bool:
        # the plan counts the host values of the planned nodes' ancestors as there:
        # host eviction must not take them (the locks pin the paths on every tier)
        locks = [self.tree.lock(node) for node, _ in planned] if any(self._short(sizes)) else []
        try:
            return self._evict_host_for(sizes)
        finally:
            for lock in locks:
                self.tree.unlock(lock)

    def _short(self, sizes: Sequence[int]) -> list[int]:
        return [max(0, size - pool.available) for pool, size in zip(self.pools, sizes)]

    def _evict_host_for(self, sizes: Sequence[int]) -> bool:
        """Evict host values until ``sizes`` fit (if they can); whether they fit."""
        short = self._short(sizes)
        if any(short):
            self.evict_host(short)
        return all(size <= pool.available for pool, size in zip(self.pools, sizes))

    def reserve(self, sizes: Sequence[int]) -> list[np.ndarray] | None:
        """Allocate ``sizes`` host slots per component for an L3 read (the caller's lock
        keeps its own path), evicting host values as needed; ``None`` (nothing allocated,
        host eviction may have run) when they do not fit."""
        if not self._evict_host_for(sizes):
            return None
        parts = [pool.alloc(size) for pool, size in zip(self.pools, sizes)]
        return [np.zeros(0, np.int64) if part is None else part for part in parts]

    def evict_host(self, budgets: Sequence[int]) -> list[int]:
        """Evict host values, per component at least ``budgets[c]`` units (see
        :meth:`TreeCore.evict` on the host tier), each told to the sink before it goes, and
        free their host slots; the units evicted per component."""
        sink = self.sink
        result = self.tree.evict(budgets, tier=HOST,
                                 dropping=None if sink is None else sink.dropping)
        self.free_host(result.freed)
        return result.evicted

    def free_host(self, freed: Sequence[np.ndarray]) -> None:
        for pool, part in zip(self.pools, freed):
            if len(part):
                pool.free_pages(pool.pages_of(part))

    # ------------------------------------------------------------------ load-back

    def lookup(self, key: bytes, namespace: Namespace) -> None:
        """Nothing: the host tier is the highest below the device."""

    def prepare_load(self, node: Node, end: int) -> list[int]:
        sizes = [0] * len(self.pools)
        for current, indices in self.tree.copies.load_plan(node, end):
            for index in indices:
                component = self.tree.components[index]
                if component.per_token:
                    sizes[index] += min(current.start + current.length, end) - current.start
                else:
                    sizes[index] += component.value_size(current)
        return sizes

    def load(self, node: Node, parts: Sequence[np.ndarray], gained: int = 0
             ) -> CopyRecord | None:
        """Revive on device, from the host, what the prefix ending at ``node``'s end needs;
        the batch in flight, ``None`` when nothing is needed (``parts`` freed)."""
        planned = self.tree.copies.load_plan(node, node.start + node.length)
        if not planned:
            self.device.free_all(parts)
            return None
        sizes = self._sizes(planned)
        slots = [part if size else None for part, size in zip(parts, sizes)]
        record = self._submit(planned, sizes, slots, DEVICE)
        if record is None:
            raise CopyRefused(self.calls.last_fault or "the copy engine refused a load-back")
        self.counters.load_requests += 1
        self.counters.host_hit_tokens += gained
        return record

    def complete_load(self, tickets: Collection[int] | None) -> None:
        self.wait(list(self.records if tickets is None else tickets))

    # ------------------------------------------------------------------ copies

    def _sizes(self, planned: Planned) -> list[int]:
        sizes = [0] * len(self.pools)
        for node, indices in planned:
            for index in indices:
                sizes[index] += self.tree.components[index].value_size(node)
        return sizes

    def _submit(self, planned: Planned, sizes: list[int],
                slots: list[np.ndarray | None], tier: int) -> CopyRecord | None:
        """Submit one batch; once the engine took it, place the destination values, lock
        the nodes and track it. ``None`` (the slots freed, nothing else changed) when the
        engine refused it."""
        placed, copies = plan_batch(self.tree, planned, slots, tier)
        ticket = self._ticket(copies)
        if ticket is None:
            empty = np.zeros(0, np.int64)
            freed = [empty if part is None else part for part in slots]
            if tier == HOST:
                self.free_host(freed)
            else:
                self.device.free_all(freed)
            return None
        tree = self.tree
        for node, index, value in placed:
            tree.copies.place(node, index, tier, value)
        locks = [tree.lock(node) for node, _ in planned]
        record = CopyRecord(ticket, tier, locks, sizes)
        tree.copies.track(record, planned)
        self.records[ticket] = record
        self.counters.submitted(tier)
        return record

    def _ticket(self, copies: list[Copy]) -> int | None:
        """The engine's ticket for ``copies``; ``None`` when it refused them (counted). A
        ticket already in flight is refused, and the copy in flight under it can no longer
        be told from this one: it counts as failed when reported."""
        ticket = self.calls.submit(copies)
        if ticket is not None and ticket in self.records:
            self.calls.fault(f"submit answered ticket {ticket}, already in flight")
            self.records[ticket].doubtful = True
            return None
        return ticket

    def finish(self, completions: Iterable[Completion]) -> list[tuple[CopyRecord, bool]]:
        """Apply acknowledgements (validated: see :mod:`.engine_calls`): unlock and untrack
        each batch; a failed one gives its placed values back to their pools. Returns
        (record, ok) for this cache's batches."""
        done = []
        for completion in completions:
            record = self.records.pop(completion.ticket, None)
            if record is None:
                continue
            ok = completion.ok is True and not record.doubtful
            self.listener.copy_reported(record, ok)
            if not ok:
                self._take_back(record)
            elif record.tier == HOST:
                planned = list(record.nodes.values())
                self.tree.copies.announce(planned, HOST)
                if self.sink is not None:
                    self.sink.backed_up(planned)
            self.tree.copies.untrack(record)
            for lock in record.locks:
                self.tree.unlock(lock)
            self.counters.completed(record.tier, record.units, ok)
            done.append((record, ok))
        return done

    def _take_back(self, record: CopyRecord) -> None:
        freed: list[list[np.ndarray]] = [[] for _ in self.pools]
        # children first: a failed load-back's BlockRemoved events go leaf-first, like eviction's
        for node, indices in sorted(record.nodes.values(), key=lambda entry: -entry[0].start):
            for index in indices:
                value = self.tree.copies.take_back(node, index, record.tier)
                if value is not None:
                    freed[index].append(value)
        joined = [np.concatenate(parts) if parts else np.zeros(0, np.int64) for parts in freed]
        if record.tier == HOST:
            self.free_host(joined)
        else:
            self.device.free_all(joined)

    def poll(self) -> None:
        """Apply whatever the engine completed since the last poll (and what a wait
        received and kept for later)."""
        self.finish(self.calls.take_all())

    def wait(self, tickets: Iterable[int]) -> list[tuple[CopyRecord, bool]]:
        """Block until ``tickets`` completed and apply them. Other batches the engine
        reports meanwhile are kept for the next :meth:`poll`: a wait inside an eviction
        never changes what the caller of that eviction is working on. Raises
        :class:`CopyEngineError` when the engine has not reported them all within
        ``wait_timeout_s`` (nothing applied: they stay in flight)."""
        wanted = {ticket for ticket in tickets if ticket in self.records}
        return self.finish(self.calls.take(wanted, self.config.wait_timeout_s))

    def settle_backups(self) -> bool:
        """Wait for every backup in flight (its locks keep device values from eviction);
        whether there was any."""
        tickets = [t for t, record in self.records.items() if record.tier == HOST]
        self.wait(tickets)
        return bool(tickets)

    # ------------------------------------------------------------------ device eviction

    def evict_device(self, budgets: Sequence[int]) -> list[int]:
        """Device eviction for the pools: stepwise under ``write_back`` (eviction pauses on
        a value the host lacks, the controller backs the node up and waits for the copy,
        then eviction goes on and demotes it); plain otherwise. Returns units evicted."""
        evicted = [0] * len(budgets)
        pause = self._pause if self.write_back else None
        try:
            while True:
                remaining = [max(0, b - e) for b, e in zip(budgets, evicted)]
                result = self.tree.evict(remaining, pause)
                self.device.free_all(result.freed)
                evicted = [a + b for a, b in zip(evicted, result.evicted)]
                if result.paused is None:
                    return evicted
                self._back_up_before_eviction(result.paused)
        finally:
            self._skip.clear()

    def _pause(self, node: Node, index: int) -> bool:
        return self.tier.value(node, index) is None and node.id not in self._skip

    def _back_up_before_eviction(self, node: Node) -> None:
        record = self.backup([node])
        done = [] if record is None else self.wait([record.ticket])
        if record is None or any(r is record and not ok for r, ok in done):
            self._skip.add(node.id)  # no room or a failed copy: evict it without a backup

    # ------------------------------------------------------------------ housekeeping

    def settle(self) -> None:
        self.wait(list(self.records))

    def take_events(self) -> list[KVEvent]:
        """None: the host tier's events are the tree's (medium ``CPU``)."""
        return []

    def stats(self) -> HostStats:
        return host_stats(self, self.tree)

    def reserved(self) -> None:
        """None: the device has no slots outside the tree but the cache's own."""

    def check(self, reserved: Sequence[np.ndarray] | None) -> None:
        check_host(self, self.tree, reserved)

    def snapshot(self) -> tuple[object, ...]:
        return (tuple(pool.snapshot() for pool in self.pools), tuple(sorted(self.records)),
                tuple(sorted(self.due)))

    def reset(self) -> None:
        """Wait for every copy in flight (their slots are about to be reused), then forget
        every host value."""
        self.settle()
        for pool in self.pools:
            pool.reset()
        self.due.clear()

    def close(self) -> bool:
        """Nothing to end: host memory is this process's; the tier stays."""
        return False
