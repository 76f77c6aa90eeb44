"""StorageTierController: the shared storage tier (L3) of one cache, below its host tier.

Writes (:mod:`.writes`) follow the host tier's write policy; reads (:mod:`.reads`) start at
admission (or :meth:`prefetch`), run on the I/O thread into reserved host slots, and join
the tree as host-only nodes, which the host tier's load-back then brings to the device.
The scheduler thread blocks on the store only where the wait policy says so. Every method
is owner-thread only and mutates as it says; the store's failures read as misses (counted
by the backend, see ``stats().storage``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from concurrent.futures import Future
from typing import NamedTuple

import numpy as np

from ..core.events import KVEvent
from ..core.hashing import namespace_seed
from ..core.keys import Namespace
from ..core.node import Node
from ..core.tiers import HOST, PRIMARY
from ..core.tree import TreeCore
from ..errors import InvariantError, StorageTimeoutError
from ..host.host_controller import HostTierController
from ..host.parts import HostSink
from .reads import Prefetch, Read, query_job
from .restore import best_cut, needed_pages
from .rows import PageRows
from .storage_config import StorageTier
from .tier_stats import StorageTierStats
from .waits import wait_until
from .worker import StorageWorker
from .write_back import WriteBack
from .writes import StorageWrites

COUNTERS = ("prefetches", "queries_answered", "misses", "no_room", "not_attached",
            "cancelled", "restores", "restored_tokens", "hit_pages")
"""What the tier counts: prefetches started, queries answered, prefetches dropped (the
store had no usable page, no host room, the tree could not take them, or a reset/close
cancelled them), restores and the tokens they added, pages the store said it holds."""


class StorageParts(NamedTuple):
    """What a storage tier is built from (:func:`~radixkv.storage.build.storage_parts`),
    its write half made before the host tier, which is built with ``sink``."""

    config: StorageTier
    worker: StorageWorker
    writes: StorageWrites
    buffers: Sequence[np.ndarray]
    """Per component, the copy engine's host buffer (L3 reads and writes go there)."""
    write_back: WriteBack | None
    """Under the ``write_back`` host policy (and ``write``): what host eviction drops goes
    to L3, paths first."""
    sink: HostSink | None
    """What the host tier tells of its backups and drops: ``write_back``, or under a
    write-through policy a :class:`~.write_through.WriteThrough`; ``None`` without writes."""


class StorageTierController:
    """The L3 tier of a cache (built by the cache from ``CacheConfig.storage``), the
    :class:`~radixkv.cache.lower_tier.LowerTier` below the host tier, whose verbs say what
    each call does (the ones below without a contract of their own are those). It loads
    nothing to the device and stores nothing at the cache's word: its reads go to the host
    (:meth:`lookup`), its writes follow the host tier's sink."""

    name = "storage"

    def __init__(self, tree: TreeCore, host: HostTierController, parts: StorageParts) -> None:
        self.config, self.tree, self.host = parts.config, tree, host
        self.worker, self.writes, self.write_back = parts.worker, parts.writes, parts.write_back
        self.components = tree.components
        self.layouts = self.writes.layouts
        self.buffers = list(parts.buffers)
        self.hasher = tree.log.hasher
        self.page = tree.page_size
        self.pending: dict[tuple[Namespace, str], Prefetch] = {}
        self.draining: list[tuple[Prefetch, list[np.ndarray]]] = []
        """Taken prefetches whose reads still run, with the slots to free when they end."""
        self.counters = dict.fromkeys(COUNTERS, 0)

    # ------------------------------------------------------------------ reads

    def lookup(self, key: bytes, namespace: Namespace) -> None:
        self.fetch(key, namespace)

    def fetch(self, key: bytes, namespace: Namespace) -> bool:
        """Ask L3 for more of ``key`` (:meth:`prefetch`) and take what arrives within the
        wait policy; whether the fetch is still in flight afterwards."""
        record = self.prefetch(key, namespace)
        if record is None:
            return False
        self.take(record, self.wait_seconds())
        return record.tag in self.pending

    def prepare_load(self, node: Node, end: int) -> None:
        """None: what L3 holds reaches the device through the host (:meth:`lookup`)."""

    def load(self, node: Node, parts: Sequence[np.ndarray], gained: int) -> None:
        """Never called (:meth:`prepare_load` names no slots)."""
        raise InvariantError("the storage tier copies nothing to the device")

    def complete_load(self, tickets: Collection[int] | None) -> None:
        """With ``None``, :meth:`complete`; nothing else (no load-back is L3's)."""
        if tickets is None:
            self.complete()

    def prepare_store(self, nodes: Sequence[Node]) -> None:
        """Nothing: L3's writes follow the host tier's (its sink)."""

    def complete_store(self) -> None:
        """Nothing: queued writes are submitted by :meth:`poll`."""

    def prefetch(self, key: bytes, namespace: Namespace) -> Prefetch | None:
        """Start fetching what L3 may hold of ``key`` beyond what device and host serve,
        when that is at least the threshold (and a page); the one in flight for the same
        key if any. Locks the served prefix until taken; backs its path up to the host
        first where it lacks host copies (restored nodes hang below host values). O(pages)
        hashes."""
        unit, page = self.tree.unit, self.page
        end = len(key) // unit
        served = self.tree.copies.match_all_tiers(key, namespace)
        start = served.length
        if end - start < max(self.config.prefetch_threshold, page):
            return None
        seed = namespace_seed(namespace, self.hasher)
        digests = self.hasher.chain(seed, key[: end * unit], self.tree.page_bytes)
        keys = [layout.keys(digests) for layout in self.layouts]
        tag = (namespace, keys[PRIMARY][-1])
        if tag in self.pending:
            return self.pending[tag]
        lock = None
        if served.node is not None:
            lock = self.tree.lock_match(served)
            if not self.tree.attacher.attachable(lock.node, HOST):
                self.host.backup([lock.node])
        record = Prefetch(key[: end * unit], namespace, start, keys, lock, tag)
        record.query = self.worker.call(query_job(keys, start // page))  # type: ignore[arg-type]
        self.pending[tag] = record
        self.counters["prefetches"] += 1
        return record

    def wait_seconds(self) -> float:
        """How long an admission waits for its prefetch under the wait policy (never more
        than ``wait_timeout_s``)."""
        policy, config = self.config.wait_policy, self.config
        if policy == "best_effort":
            return 0.0
        return config.wait_timeout_s if policy == "wait_complete" else float(config.timeout_s)

    def take(self, record: Prefetch, timeout: float) -> None:
        """Wait up to ``timeout`` seconds of the tier's clock (at most ``wait_timeout_s``)
        for ``record``, then attach what arrived (the reads still running are dropped: their
        slots are freed when they end); a prefetch of which nothing usable has arrived by
        then stays in flight (a later poll or admit takes it)."""
        self._wait_for(record, self._deadline(timeout))
        self._take_arrived(record, wait_backups=timeout > 0)

    def _deadline(self, seconds: float) -> float:
        return self.config.clock() + min(seconds, self.config.wait_timeout_s)

    def _wait_for(self, record: Prefetch, deadline: float) -> None:
        """Advance ``record`` (an answered query starts its reads) until it settled, was
        dropped, or the tier's clock passed ``deadline``."""
        while record.tag in self.pending:
            self._advance(record)
            running = [future for future in record.futures() if not future.done()]
            if record.tag not in self.pending or not running \
                    or not wait_until(running, deadline, self.config.clock):
                return

    def _take_arrived(self, record: Prefetch, wait_backups: bool) -> None:
        """Attach what arrived of a planned ``record``, unless nothing usable did (or,
        without ``wait_backups``, the host backup of the path above it is still landing):
        then it stays in flight for a later poll or admit."""
        if record.tag not in self.pending or record.cut is None:
            return
        if not record.settled() and self._arrived_cut(record) is None:
            return  # nothing usable arrived yet: the reads go on for a later request
        if self._above_backing_up(record):
            if not wait_backups:
                return  # the path's host backup has not landed: a later poll attaches
            self.host.settle_backups()
        self._finish(record)

    def _arrived_cut(self, record: Prefetch) -> int | None:
        """Where a restore of what has arrived of ``record`` would end (``None``: nowhere)."""
        assert record.cut is not None
        arrived = record.arrived(self.components, self.page)
        return best_cut(self.components, record.start, record.cut, self.page, arrived)

    def complete(self) -> None:
        """Take every prefetch in flight once it completed. Raises
        :class:`StorageTimeoutError` when they do not all complete within
        ``wait_timeout_s``: none is taken then (what a poll would have started meanwhile
        was), they stay in flight."""
        deadline = self._deadline(self.config.wait_timeout_s)
        records = list(self.pending.values())
        for record in records:
            self._wait_for(record, deadline)
        late = [record.tag for record in records if record.tag in self.pending
                and (record.cut is None or not record.settled())]
        if late:
            raise StorageTimeoutError(f"{len(late)} L3 prefetches not complete within "
                                      f"wait_timeout_s={self.config.wait_timeout_s:g} s")
        for record in records:
            self._take_arrived(record, wait_backups=True)

    def _above_backing_up(self, record: Prefetch) -> bool:
        """Whether the host backup of the prefix above the restore is still in flight."""
        return record.lock is not None and self.tree.copies.copying_above(record.lock.node, HOST)

    def poll(self) -> None:
        """Advance every prefetch (a query answered: reserve and read; reads done: attach),
        free the slots of finished leftovers, submit queued writes, count landed ones."""
        for record in list(self.pending.values()):
            self._advance(record)
            if record.tag in self.pending and record.cut is not None and record.settled() \
                    and not self._above_backing_up(record):
                self._finish(record)
        self._drain()
        self.writes.flush()
        self.writes.collect()
        if self.write_back is not None:
            self.write_back.prune()

    def _advance(self, record: Prefetch) -> None:
        """A prefetch whose query answered: plan the cut, reserve host slots, start reads."""
        if record.cut is not None or record.query is None or not record.query.done():
            return
        self.counters["queries_answered"] += 1
        flags = record.query.result()
        page, start = self.page, record.start
        cut = best_cut(self.components, start, start + len(flags[PRIMARY]) * page, page, flags)
        if cut is None:
            return self._drop(record, "misses", [])
        spans = [needed_pages(c, start, cut, page) for c in self.components]
        sizes = [(high - low) * (page if c.per_token else 1)
                 for c, (low, high) in zip(self.components, spans)]
        slots = self.host.reserve(sizes)
        if slots is None:
            return self._drop(record, "no_room", [])
        record.cut, record.slots = cut, slots
        self.counters["hit_pages"] += sum(high - low for low, high in spans)
        self._start_reads(record, spans)

    def _start_reads(self, record: Prefetch, spans: list[tuple[int, int]]) -> None:
        batch = self.worker.backend.max_batch
        for index, (low, high) in enumerate(spans):
            rows = self.page if self.components[index].per_token else 1
            table = record.slots[index].reshape(high - low, rows)
            for first in range(0, high - low, batch):
                pages = min(batch, high - low - first)
                part = PageRows(self.buffers[index], table[first : first + pages])
                future = self.worker.get_into(record.keys[index][low + first :
                                                                 low + first + pages], part)
                record.reads.append(Read(index, first, pages, future))

    def _finish(self, record: Prefetch) -> None:
        """Attach what arrived of a planned prefetch; free or park the rest of its slots."""
        assert record.cut is not None
        page, start = self.page, record.start
        cut = self._arrived_cut(record)
        if cut is None:
            return self._drop(record, "misses", record.slots)
        runs, used = [], []
        for component, slots in zip(self.components, record.slots):
            low, high = needed_pages(component, start, cut, page)
            planned_low = needed_pages(component, start, record.cut, page)[0]
            rows = page if component.per_token else 1
            part = slots[(low - planned_low) * rows : (high - planned_low) * rows]
            runs.append((low * page if component.per_token else cut, part))
            used.append(part)
        attached = self.tree.attacher.attach(record.key[: cut * self.tree.unit], record.namespace,
                                    runs, HOST)
        if not attached.nodes:
            self.counters["not_attached"] += 1
        self.counters["restores"] += bool(attached.nodes)
        self.counters["restored_tokens"] += sum(node.length for node in attached.nodes)
        if self.write_back is not None:
            self.write_back.restored(attached.nodes)
        self.writes.announce(attached.nodes)
        leftover = [np.setdiff1d(slots, np.setdiff1d(part, unused if unused is not None
                                                     else part[:0]))
                    for slots, part, unused in zip(record.slots, used, attached.unused)]
        self._close(record, leftover)

    def _drop(self, record: Prefetch, reason: str, slots: list[np.ndarray]) -> None:
        self.counters[reason] += 1
        self._close(record, slots)

    def _close(self, record: Prefetch, leftover: list[np.ndarray]) -> None:
        del self.pending[record.tag]
        if record.lock is not None:
            self.tree.unlock(record.lock)
            record.lock = None
        if leftover:
            self.draining.append((record, leftover))
        self._drain()

    def _drain(self) -> None:
        """Free the slots of taken prefetches whose reads ended."""
        still = []
        for record, leftover in self.draining:
            if record.settled():
                self.host.free_host(leftover)
            else:
                still.append((record, leftover))
        self.draining = still

    # ------------------------------------------------------------------ housekeeping

    def stats(self) -> StorageTierStats:
        """A snapshot of the counters (plain reads: see ``PrefixCache.stats``)."""
        c, w = self.counters, self.writes
        return StorageTierStats(
            prefetches=c["prefetches"], lookups=c["queries_answered"],
            hit_pages=c["hit_pages"], misses=c["misses"], no_room=c["no_room"],
            not_attached=c["not_attached"], cancelled=c["cancelled"], restores=c["restores"],
            restored_tokens=c["restored_tokens"], prefetches_in_flight=len(self.pending),
            queued_pages=w.queued_pages, written_pages=w.written_pages,
            failed_pages=w.failed_pages, events_dropped=w.events.dropped,
            backend=self.worker.stats())

    def check(self, reserved: Sequence[np.ndarray] | None = None) -> None:
        """Raise :class:`InvariantError` unless every prefetch in flight still holds its
        lock and its reserved slots match its plan (nothing below L3: no ``reserved``)."""
        for record in self.pending.values():
            if record.lock is not None:
                self.tree.locker.check_receipt(record.lock)
            if record.cut is None and record.slots:
                raise InvariantError(f"prefetch of {record.tag} holds slots before its plan")

    def reserved(self) -> list[np.ndarray]:
        """Per component, the host slots reserved by prefetches (in flight or draining)."""
        parts: list[list[np.ndarray]] = [[] for _ in self.components]
        for record in self.pending.values():
            for index, slots in enumerate(record.slots):
                parts[index].append(slots)
        for _record, leftover in self.draining:
            for index, slots in enumerate(leftover):
                parts[index].append(slots)
        return [np.concatenate(p) if p else np.zeros(0, np.int64) for p in parts]

    def settle(self) -> None:
        """Wait for every job of the I/O thread; prefetches are dropped (their slots freed),
        writes submitted and counted. Raises :class:`StorageTimeoutError` when that I/O
        does not end within ``wait_timeout_s``: nothing is dropped then (queued writes
        were submitted, as a poll does), so the call can be retried."""
        deadline = self._deadline(self.config.wait_timeout_s)
        self._wait_all(deadline)
        self.writes.flush()
        self._wait_all(deadline)
        for record in list(self.pending.values()):
            self._drop(record, "cancelled", record.slots)
        self._drain()
        self.writes.collect(block=True)

    def _wait_all(self, deadline: float) -> None:
        """Wait for every job submitted to the I/O thread, or raise
        :class:`StorageTimeoutError` once the tier's clock passed ``deadline``."""
        futures: list[Future[object]] = [f for r in self.pending.values() for f in r.futures()]
        futures += [f for record, _slots in self.draining for f in record.futures()]
        futures += self.writes.futures()
        if not wait_until(futures, deadline, self.config.clock):
            raise StorageTimeoutError(
                f"the store's I/O did not end within wait_timeout_s="
                f"{self.config.wait_timeout_s:g} s (a stalled store): it stays in flight")

    def take_events(self) -> list[KVEvent]:
        """The BlockStored events (medium ``STORAGE``) of the pages written to L3."""
        return self.writes.take_events()

    def snapshot(self) -> None:
        """None: what L3 holds is the store's, shared by other engines."""

    def reset(self) -> None:
        """Settle, then forget (the caller resets the tree and the host pools)."""
        self.settle()
        if self.write_back is not None:
            self.write_back.clear()

    def close(self) -> bool:
        """Under ``write_back`` with ``flush_on_close``, write what the host holds that L3
        lacks; settle, close the writes (the host tier's sink then writes nothing more),
        stop the I/O thread and close the store: closed."""
        if self.write_back is not None and self.config.flush_on_close:
            self.write_back.flush()
        self.settle()
        self.writes.close()
        self.worker.close()
        return True
