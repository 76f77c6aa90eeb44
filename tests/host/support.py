"""Shared pieces of the host-tier tests: a copy engine whose batches complete when the test
says, an audited cache with a host tier, and a router-like check of the KV event stream."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from radixkv import AllBlocksCleared, BlockRemoved, BlockStored, CacheConfig, PrefixCache
from radixkv.core.hashing import event_id, page_digests
from radixkv.core.tiers import DEVICE, HOST, PRIMARY
from radixkv.host import HostTier
from radixkv.host.copy_engine import Completion, Copy, CopyEngine

from ..audited import AuditedCache

GPU, CPU = "GPU", "CPU"


class HeldEngine(CopyEngine):
    """Batches complete only when :meth:`complete` releases them (in any order the test
    picks); bookkeeping only, no bytes move."""

    def __init__(self) -> None:
        self.pending: dict[int, list[Copy]] = {}
        self.released: dict[int, bool] = {}
        self.tickets = 0

    def submit(self, copies: Sequence[Copy]) -> int:
        self.tickets += 1
        self.pending[self.tickets] = list(copies)
        return self.tickets

    def complete(self, ticket: int, ok: bool = True) -> None:
        assert ticket in self.pending and ticket not in self.released
        self.released[ticket] = ok

    def poll(self) -> list[Completion]:
        done = [Completion(ticket, ok) for ticket, ok in self.released.items()]
        for completion in done:
            del self.pending[completion.ticket]
        self.released = {}
        return done

    def wait(self, tickets: Collection[int]) -> list[Completion]:
        for ticket in tickets:  # a blocking wait: the batch completes (successfully)
            if ticket in self.pending and ticket not in self.released:
                self.released[ticket] = True
        return self.poll()


class EventStream:
    """Replays KV events as a router would, per medium, and fails on anything a router
    would drop or misread: a parent never announced on that medium, a page stored twice,
    a removal of a page not held or of a parent before its children, a partial page."""

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        self.held: dict[str, dict[int, int | None]] = {}
        """Medium -> page id -> its parent's page id."""
        self.children: dict[str, Counter[int]] = {}
        self.clear()

    def clear(self) -> None:
        self.held = {GPU: {}, CPU: {}}
        self.children = {GPU: Counter(), CPU: Counter()}

    def apply(self, events: Sequence[Any]) -> None:
        for event in events:
            if isinstance(event, AllBlocksCleared):
                self.clear()
            elif isinstance(event, BlockStored):
                self._stored(event)
            else:
                assert isinstance(event, BlockRemoved), event
                self._removed(event)

    def _stored(self, event: BlockStored) -> None:
        held, children = self.held[event.medium], self.children[event.medium]
        assert len(event.token_ids) == self.page_size * len(event.block_hashes), event
        parent = event.parent_block_hash
        assert parent is None or parent in held, f"{event.medium}: unannounced parent {event}"
        for page in event.block_hashes:
            assert page not in held, f"{event.medium}: page {page} stored twice"
            held[page] = parent
            if parent is not None:
                children[parent] += 1
            parent = page

    def _removed(self, event: BlockRemoved) -> None:
        held, children = self.held[event.medium], self.children[event.medium]
        for page in reversed(event.block_hashes):
            assert page in held, f"{event.medium}: removed page {page} was not held"
            assert not children[page], f"{event.medium}: page {page} removed before children"
            parent = held.pop(page)
            if parent is not None:
                children[parent] -= 1

    def pages(self, medium: str) -> set[int]:
        return set(self.held[medium])


def resident(cache: PrefixCache, tier: int) -> set[int]:
    """The page ids whose FULL value the tree holds on ``tier`` (on the host: acknowledged
    backups only), read from the tree itself."""
    tree, pages = cache.tree, set()
    for node in list(tree.nodes.values()):
        if node.parent is None or not tree.has(node, PRIMARY, tier):
            continue
        if tier == HOST and any(r.tier == HOST and PRIMARY in r.nodes[node.id][1]
                                for r in tree.copying.get(node.id, ())):
            continue  # placed, in flight: announced at the acknowledgement
        pages.update(event_id(d) for d in page_digests(node, tree.page_bytes))
    return pages


class HostEventsCache(AuditedCache):
    """An audited cache with a host tier and KV events: after every call it checks the
    invariants, drains the events into :attr:`stream` (checked as a router would) and
    keeps them for :meth:`drain`, then compares the stream with what the tree holds."""

    def __init__(self, engine: CopyEngine, host: HostTier, **config: Any) -> None:
        config.setdefault("events", True)
        self.stream = EventStream(config.get("page_size", 1))
        self.events: list[Any] = []
        self.cache = PrefixCache(CacheConfig(host=host, **config), engine)
        self.audit()

    def audit(self) -> None:
        self.cache.check_invariants()
        events = self.cache.take_events()
        self.stream.apply(events)
        self.events.extend(events)
        assert self.stream.pages(GPU) == resident(self.cache, DEVICE)
        assert self.stream.pages(CPU) == resident(self.cache, HOST)

    def drain(self) -> list[tuple[str, str, list[int], int | None]]:
        """The events since the last drain as (type, medium, hashes, parent)."""
        out = [(type(e).__name__, e.medium, list(e.block_hashes),
                getattr(e, "parent_block_hash", None)) for e in self.events
               if not isinstance(e, AllBlocksCleared)]
        self.events = []
        return out
