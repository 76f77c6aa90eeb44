"""L3 writes: snapshots of host values, batched puts, STORAGE events once a put landed.

A write copies the host rows of a node's value at once (on the scheduler's thread), so the
host slots may be evicted or reused while the put runs on the I/O thread. Writes queue in
an outbox and go out as one put per component at the next :meth:`StorageWrites.flush`.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

from ..components.base import Component
from ..core.event_log import EventQueue
from ..core.events import BlockStored, KVEvent, block_stored
from ..core.hashing import PageHash, page_digests
from ..core.keys import unpack_tokens
from ..core.node import Node
from .layout import StorageLayout
from .rows import PageRows
from .worker import StorageWorker

STORAGE_MEDIUM = "STORAGE"
"""The medium of the KV events that announce pages written to L3."""

WITHHELD_LIMIT = 1 << 16
"""Block hashes of unannounced pages remembered at most (then forgotten all at once: a
store that refuses every put must not grow the set without bound)."""


class _Put:
    __slots__ = ("events", "future", "spans")

    def __init__(self, future: Future[list[bool]], spans: list[tuple[int, int]],
                 events: list[BlockStored | None]) -> None:
        self.future, self.spans, self.events = future, spans, events


class StorageWrites:
    """The write half of the storage tier (one per cache)."""

    def __init__(self, worker: StorageWorker, components: Sequence[Component],
                 layouts: Sequence[StorageLayout], buffers: Sequence[np.ndarray],
                 hasher: PageHash, page_bytes: int, bigram: bool, events: EventQueue) -> None:
        self.worker, self.components, self.layouts = worker, list(components), list(layouts)
        self.buffers, self.hasher = buffers, hasher
        self.page_bytes, self.bigram = page_bytes, bigram
        self.outbox: list[list[tuple[list[str], np.ndarray, BlockStored | None]]] = [
            [] for _ in self.components]
        self.puts: list[_Put] = []
        self.events = events
        """STORAGE events of landed puts, until taken (bounded like the tree's; disabled
        where the cache has events off: none is built)."""
        self.queued_pages = self.written_pages = self.failed_pages = 0
        self.closed = False
        """Set by :meth:`close`: the I/O thread is gone, nothing more is queued."""
        self.withheld: set[int] = set()
        """Block hashes of pages not announced (a put of theirs failed): an event that
        names one as its parent is withheld too, so the stream never names a parent it
        did not announce (a prefix lookup could not reach those pages either)."""

    def queue(self, node: Node, index: int, slots: np.ndarray) -> None:
        """Snapshot component ``index``'s host rows ``slots`` of ``node`` (still linked)
        for a put; O(pages) hashes (cached on the node) and one row copy. Nothing once
        :meth:`close` ran."""
        if self.closed:
            return
        digests = page_digests(node, self.page_bytes, self.hasher)
        if not digests:
            return
        component, layout = self.components[index], self.layouts[index]
        keys = layout.keys(digests if component.per_token else digests[-1:])
        rows = np.take(self.buffers[index], slots, axis=0)
        event = None
        if component.publishes_events and self.events.enabled:
            event = self._event(node, digests)
        self.outbox[index].append((keys, rows, event))
        self.queued_pages += len(keys)

    def _event(self, node: Node, digests: list[bytes]) -> BlockStored:
        parent = node.parent
        assert parent is not None
        head = None
        if parent.parent is not None:
            head = page_digests(parent, self.page_bytes, self.hasher)[-1]
        parent_hash, ids = self.hasher.ids(digests, head)
        page = self.page_bytes // (8 if self.bigram else 4)
        return block_stored(ids, parent_hash, unpack_tokens(node.key, self.bigram), page,
                            STORAGE_MEDIUM, node.namespace)

    def announce(self, nodes: list[Node]) -> None:
        """Queue STORAGE events for ``nodes`` (top-down), pages just read from L3: this
        engine's stream then names them, so pages it writes below them chain to pages a
        router saw on the same stream. They follow every write queued before (one empty
        job after the outbox's puts, on the same ordered I/O thread)."""
        if not nodes or not self.events.enabled \
                or not any(c.publishes_events for c in self.components):
            return
        events: list[BlockStored | None] = [
            self._event(node, page_digests(node, self.page_bytes, self.hasher))
            for node in nodes]
        self.flush()
        self.puts.append(_Put(self.worker.call(_nothing), [(0, 0)] * len(events), events))

    def flush(self) -> None:
        """Submit what the outbox holds: one put per component."""
        for index, items in enumerate(self.outbox):
            if not items:
                continue
            self.outbox[index] = []
            keys = [key for item in items for key in item[0]]
            data = np.concatenate([item[1] for item in items])
            per_page = len(data) // len(keys)
            rows = PageRows(data, np.arange(len(data)).reshape(len(keys), per_page))
            spans, start = [], 0
            for item in items:
                spans.append((start, start + len(item[0])))
                start += len(item[0])
            self.puts.append(_Put(self.worker.put_from(keys, rows), spans,
                                  [item[2] for item in items]))

    def futures(self) -> list[Future[object]]:
        """The puts still on the I/O thread, or done and not counted yet."""
        return [put.future for put in self.puts]  # type: ignore[misc]

    def collect(self, block: bool = False) -> None:
        """Count the puts that landed (all of them with ``block``) and queue the events of
        the nodes whose every page was stored."""
        still = []
        for put in self.puts:
            if not block and not put.future.done():
                still.append(put)
                continue
            flags = put.future.result()
            stored = sum(flags)
            self.written_pages += stored
            self.failed_pages += len(flags) - stored
            for (low, high), event in zip(put.spans, put.events):
                if event is not None:
                    self._settle_event(event, all(flags[low:high]))
        self.puts = still

    def _settle_event(self, event: BlockStored, stored: bool) -> None:
        """Announce ``event`` if its pages were ``stored`` below an announced parent."""
        if stored and event.parent_block_hash not in self.withheld:
            self.withheld.difference_update(event.block_hashes)
            self.events.push(event)
            return
        if len(self.withheld) >= WITHHELD_LIMIT:
            self.withheld.clear()
        self.withheld.update(event.block_hashes)

    def close(self) -> None:
        """Queue nothing more: the host tier still tells its sink of backups and drops
        after the storage tier closed, and they must not reach a stopped I/O thread."""
        self.closed = True

    def take_events(self) -> list[KVEvent]:
        return self.events.take()


def _nothing(_backend: object) -> list[bool]:
    """An I/O job that does nothing: it completes once every job before it has."""
    return []
