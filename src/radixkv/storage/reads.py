"""L3 reads: a prefetch asks the store how much more of a prompt it holds, fetches that
into reserved host slots on the I/O thread, and hands what arrived to the tree.

A :class:`Prefetch` goes *query* (one job: the primary's leading pages, then every other
component's pages in that range) → *read* (host slots reserved, one get per batch of pages
and component) → taken: what arrived, cut by the hit rules (:mod:`.restore`), joins the
tree as host-only nodes; slots of reads still running are freed when those finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

from ..components.base import Component
from ..core.keys import Namespace
from ..core.types import Lock
from .backend import StorageBackend
from .restore import needed_pages

Flags = list[list[bool]]


class Read:
    """One get: ``pages`` pages of component ``index`` from page ``first`` of its run."""

    __slots__ = ("first", "future", "index", "pages")

    def __init__(self, index: int, first: int, pages: int, future: Future[list[bool]]) -> None:
        self.index, self.first, self.pages, self.future = index, first, pages, future


class Prefetch:
    """One prompt's L3 fetch (see the module). ``start``: the prefix the tree served when
    it began (locked by ``lock`` while the fetch runs); ``keys``: per component, the
    storage keys of every page of ``key``; ``cut``: where the restore is planned to end,
    once the query answered; ``slots``: per component, the reserved host slots of the
    pages ``needed_pages`` names for that cut."""

    __slots__ = ("cut", "key", "keys", "lock", "namespace", "query", "reads", "slots", "start",
                 "tag")

    def __init__(self, key: bytes, namespace: Namespace, start: int, keys: list[list[str]],
                 lock: Lock | None, tag: tuple[Namespace, str]) -> None:
        self.key, self.namespace, self.start, self.keys = key, namespace, start, keys
        self.lock, self.tag = lock, tag
        self.query: Future[Flags] | None = None
        self.cut: int | None = None
        self.slots: list[np.ndarray] = []
        self.reads: list[Read] = []

    def futures(self) -> list[Future[object]]:
        """What is still running (the query, or the reads)."""
        if self.cut is None:
            return [] if self.query is None else [self.query]  # type: ignore[list-item]
        return [read.future for read in self.reads]  # type: ignore[misc]

    def settled(self) -> bool:
        return all(future.done() for future in self.futures())

    def arrived(self, components: Sequence[Component], page: int) -> Flags:
        """Per component, from page ``start // page``: whether that page arrived whole (a
        read still running counts as not arrived)."""
        assert self.cut is not None
        first = self.start // page
        spans = [needed_pages(c, self.start, self.cut, page) for c in components]
        flags: Flags = [[False] * (high - first) for _low, high in spans]
        for read in self.reads:
            got = read.future.result() if read.future.done() else [False] * read.pages
            offset = spans[read.index][0] - first + read.first
            flags[read.index][offset : offset + read.pages] = got
        return flags


def query_job(keys: list[list[str]], first: int) -> object:
    """The query of a prefetch, as one job for the I/O thread: the primary's leading pages
    from page ``first``, then each other component's presence over those pages."""

    def job(backend: StorageBackend) -> Flags:
        found = backend.exists_prefix(keys[0][first:])
        flags: Flags = [[True] * found]
        for others in keys[1:]:
            flags.append(backend.exists(others[first : first + found]) if found else [])
        return flags

    return job
