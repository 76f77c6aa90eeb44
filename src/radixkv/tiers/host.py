"""HostTierController: the host tier's pools, copies and stepwise eviction for a cache.

It carries out what the tree decides (:mod:`radixkv.core.tiering`): allocates host or device
slots, places the destination values on the nodes, locks the nodes, submits the copies to
the engine, and on each acknowledgement unlocks them (or, for a failed copy, takes the
placed values back and frees them). No copy ever runs inside a tree operation. Every method
mutates the tree and pools as it says; costs are O(nodes copied x components) plus the
engine's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.node import Node
from ..core.tiering import Planned
from ..core.tiers import DEVICE, HOST
from ..core.tree import TreeCore
from ..core.types import InFlight, Lock
from ..memory import SlotPool, SlotPoolConfig
from .config import HostTier
from .copy_engine import Completion, Copy, CopyEngine, Direction
from .counters import TierCounters

if TYPE_CHECKING:
    from ..cache.pools import ComponentPools


class CopyRecord(InFlight):
    """One submitted batch: what the tree tracks, plus the locks that keep its nodes."""

    __slots__ = ("locks", "units")

    def __init__(self, ticket: int, tier: int, locks: list[Lock], units: list[int]) -> None:
        super().__init__(ticket, tier)
        self.locks = locks
        self.units = units
        """Per component, the ledger units the batch copies."""


class HostTierController:
    """The host tier of one cache (built by the cache from ``CacheConfig.host``)."""

    def __init__(self, config: HostTier, shapes: Sequence[tuple[str, int, bool]],
                 tree: TreeCore, device: ComponentPools, engine: CopyEngine) -> None:
        """``shapes``: per component (name, page size of its pool, per_token)."""
        self.config, self.tree, self.device, self.engine = config, tree, device, engine
        self.pools = [SlotPool(SlotPoolConfig(
            capacity=config.capacity_of(name, per_token), page_size=page, name=f"host {name}"))
            for name, page, per_token in shapes]
        self.records: dict[int, CopyRecord] = {}
        self.threshold = config.threshold
        self.due: dict[int, Node] = {}
        """Nodes whose uses reached the threshold, to back up at the next flush."""
        self.counters = TierCounters(len(shapes))
        self._skip: set[int] = set()
        self._deferred: list[Completion] = []
        """Load-back completions a wait inside eviction saw, applied at the next poll."""
        self.listener: Callable[[CopyRecord, bool], None] | None = None
        """Told of each batch before it is applied (the cache fails or readies the leases
        waiting for it), whichever call (a poll, a wait inside eviction) applies it."""

    # ------------------------------------------------------------------ backups

    def note_uses(self, nodes: Iterable[Node], inserted: bool) -> None:
        """Nodes were hit by a match (or stored by an insert, ``inserted``): those whose
        uses (``1 + hits``) reached the threshold become due for a backup. O(nodes)."""
        threshold = self.threshold
        if threshold is None:
            return
        count = len(self.pools)
        for node in nodes:
            if node.hits + 1 >= threshold and node.values[count] is None:
                self.due[node.id] = node
        del inserted  # an insert is the node's first use: hits + 1 already counts it

    def flush(self) -> None:
        """Back up every due node still live (one batch)."""
        if self.due:
            nodes = list(self.due.values())
            self.due.clear()
            self.backup(nodes)

    def backup(self, nodes: Sequence[Node]) -> CopyRecord | None:
        """Copy the device values ``nodes`` (and their ancestors, see
        :meth:`TreeCore.backup_plan`) lack on the host; ``None`` when there is nothing to
        copy or no host room even after host eviction (then nothing changed but the host
        eviction). A node below an ancestor whose host copy is still in flight waits for
        it: it stays due, for a flush after that acknowledgement."""
        if self.tree.copying:
            nodes = self._not_waiting(nodes)
        planned = self.tree.backup_plan(nodes)
        if not planned:
            return None
        sizes = self._sizes(planned)
        if not self._host_room(sizes):
            self.counters.skipped_backups += 1
            return None
        slots = [pool.alloc(size) if size else None for pool, size in zip(self.pools, sizes)]
        return self._submit(planned, sizes, slots, HOST)

    def _not_waiting(self, nodes: Sequence[Node]) -> list[Node]:
        ready = []
        for node in nodes:
            if self.tree.pending_host_ancestor(node) is None:
                ready.append(node)
            elif self.tree.nodes.get(node.id) is node:
                self.due[node.id] = node
        return ready

    def _host_room(self, sizes: Sequence[int]) -> bool:
        short = [max(0, size - pool.available) for pool, size in zip(self.pools, sizes)]
        if any(short):
            result = self.tree.evict_host(short)
            self.free_host(result.freed)
        return all(size <= pool.available for pool, size in zip(self.pools, sizes))

    def free_host(self, freed: Sequence[np.ndarray]) -> None:
        for pool, part in zip(self.pools, freed):
            if len(part):
                pool.free_pages(pool.pages_of(part))

    # ------------------------------------------------------------------ load-back

    def load_sizes(self, node: Node, end: int) -> list[int]:
        """Per component, device slots a load-back of ``[0, end)`` ending in ``node`` needs
        (before the lock splits ``node`` at ``end``); pure."""
        sizes = [0] * len(self.pools)
        for current, indices in self.tree.load_plan(node, end):
            for index in indices:
                component = self.tree.components[index]
                if component.per_token:
                    sizes[index] += min(current.start + current.length, end) - current.start
                else:
                    sizes[index] += component.value_size(current)
        return sizes

    def load(self, node: Node) -> CopyRecord | None:
        """Revive on device what the prefix ending at ``node``'s end needs from the host
        (``node`` is locked; device room was ensured); ``None`` when nothing is needed."""
        planned = self.tree.load_plan(node, node.start + node.length)
        if not planned:
            return None
        sizes = self._sizes(planned)
        parts = self.device.allocate(sizes)
        slots = [part if size else None for part, size in zip(parts, sizes)]
        return self._submit(planned, sizes, slots, DEVICE)

    # ------------------------------------------------------------------ copies

    def _sizes(self, planned: Planned) -> list[int]:
        sizes = [0] * len(self.pools)
        for node, indices in planned:
            for index in indices:
                sizes[index] += self.tree.components[index].value_size(node)
        return sizes

    def _submit(self, planned: Planned, sizes: list[int],
                slots: list[np.ndarray | None], tier: int) -> CopyRecord:
        """Place the destination values, lock the nodes, submit one batch, track it."""
        count, tree = len(self.pools), self.tree
        source_tier = HOST if tier == DEVICE else DEVICE
        offsets = [0] * count
        sources: list[list[np.ndarray]] = [[] for _ in range(count)]
        for node, indices in planned:
            for index in indices:
                size = tree.components[index].value_size(node)
                part = slots[index]
                assert part is not None
                value = part[offsets[index] : offsets[index] + size].copy()
                offsets[index] += size
                source = node.values[source_tier * count + index]
                assert source is not None
                sources[index].append(source)
                tree.place(node, index, tier, value)
        direction = Direction.TO_HOST if tier == HOST else Direction.TO_DEVICE
        names = [component.name for component in tree.components]
        copies = [Copy(names[i], direction, np.concatenate(sources[i]), part)
                  for i, part in enumerate(slots) if sizes[i] and part is not None]
        locks = [tree.lock(node) for node, _ in planned]
        record = CopyRecord(self.engine.submit(copies), tier, locks, sizes)
        tree.track(record, planned)
        self.records[record.ticket] = record
        self.counters.submitted(tier, sizes)
        return record

    def finish(self, completions: Iterable[Completion]) -> list[tuple[CopyRecord, bool]]:
        """Apply acknowledgements: unlock and untrack each batch; a failed one gives its
        placed values back to their pools. Returns (record, ok) for this cache's batches."""
        done = []
        for completion in completions:
            record = self.records.pop(completion.ticket, None)
            if record is None:
                continue
            if self.listener is not None:
                self.listener(record, completion.ok)
            if not completion.ok:
                self._take_back(record)
            elif record.tier == HOST:
                self.tree.announce_host(list(record.nodes.values()))
            self.tree.untrack(record)
            for lock in record.locks:
                self.tree.unlock(lock)
            self.counters.completed(record.tier, record.units, completion.ok)
            done.append((record, completion.ok))
        return done

    def _take_back(self, record: CopyRecord) -> None:
        freed: list[list[np.ndarray]] = [[] for _ in self.pools]
        # children first: a failed load-back's BlockRemoved events go leaf-first, like eviction's
        for node, indices in sorted(record.nodes.values(), key=lambda entry: -entry[0].start):
            for index in indices:
                value = self.tree.take_back(node, index, record.tier)
                if value is not None:
                    freed[index].append(value)
        joined = [np.concatenate(parts) if parts else np.zeros(0, np.int64) for parts in freed]
        if record.tier == HOST:
            self.free_host(joined)
        else:
            self.device.free_all(joined)

    def poll(self) -> list[tuple[CopyRecord, bool]]:
        """Apply whatever the engine completed since the last poll (and the load-backs a
        wait inside eviction deferred)."""
        return self.finish(self._take_deferred() + self.engine.poll())

    def wait(self, tickets: Iterable[int], defer_loads: bool = False
             ) -> list[tuple[CopyRecord, bool]]:
        """Block until ``tickets`` completed, applying every acknowledgement seen; with
        ``defer_loads`` (a wait in the middle of an admission's eviction), load-backs seen
        are kept for the next poll or wait instead: a failed one takes device values back,
        which the admission may have matched or just placed."""
        deferred = {completion.ticket for completion in self._deferred}
        wanted = [t for t in tickets if t in self.records and t not in deferred]
        seen = self.engine.wait(wanted) if wanted else []
        if not defer_loads:
            return self.finish(self._take_deferred() + seen)
        now: list[Completion] = []
        for completion in seen:
            record = self.records.get(completion.ticket)
            (self._deferred if record is not None and record.tier == DEVICE else now).append(
                completion)
        return self.finish(now)

    def _take_deferred(self) -> list[Completion]:
        deferred, self._deferred = self._deferred, []
        return deferred

    def settle_backups(self) -> bool:
        """Wait for every backup in flight (its locks keep device values from eviction);
        whether there was any."""
        tickets = [t for t, record in self.records.items() if record.tier == HOST]
        self.wait(tickets, defer_loads=True)
        return bool(tickets)

    # ------------------------------------------------------------------ device eviction

    def evict_device(self, budgets: Sequence[int]) -> list[int]:
        """Device eviction for the pools: stepwise under ``write_back`` (eviction pauses on
        a value the host lacks, the controller backs the node up and waits for the copy,
        then eviction goes on and demotes it); plain otherwise. Returns units evicted."""
        evicted = [0] * len(budgets)
        pause = self._pause if self.threshold is None else None
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
        count = len(self.pools)
        return node.values[count + index] is None and node.id not in self._skip

    def _back_up_before_eviction(self, node: Node) -> None:
        while (ticket := self.tree.pending_host_ancestor(node)) is not None:
            self.wait([ticket], defer_loads=True)  # ancestors' host copies land first
        record = self.backup([node])
        done = [] if record is None else self.wait([record.ticket], defer_loads=True)
        if record is None or any(r is record and not ok for r, ok in done):
            self._skip.add(node.id)  # no room or a failed copy: evict it without a backup

    def reset(self) -> None:
        """Wait for every copy in flight (their slots are about to be reused), then forget
        every host value; the caller resets the tree and the device pools."""
        self.wait(list(self.records))
        for pool in self.pools:
            pool.reset()
        self.due.clear()
