"""PrefixCache: the controller that owns the pools and drives the tree for a scheduler."""

from __future__ import annotations

from .direct import Direct
from .lifecycle import Lifecycle


class PrefixCache(Lifecycle, Direct):
    """Prefix cache of one serving engine: a radix tree over token ids plus its slot pools.

    Two ways in. Request life-cycle (leases): :meth:`admit` (match, lock, allocate) →
    :meth:`extend` (decode tokens) / :meth:`commit` (chunked prefill) / :meth:`checkpoint`
    (save a MAMBA state) / :meth:`slide_window` (release SWA slots that left the window) →
    :meth:`finish` or :meth:`abort`. Caller-held slots: :meth:`allocate` → :meth:`insert`
    or :meth:`release`. Plus :meth:`match`, :meth:`lock`/:meth:`unlock`, :meth:`evict`,
    :meth:`stats`, :meth:`take_events`, :meth:`reset`, :meth:`check_invariants`.
    Every method validates before it mutates: when it raises, the cache is as it was.
    """
