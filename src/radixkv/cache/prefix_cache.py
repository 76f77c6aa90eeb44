"""PrefixCache: the controller that owns the pools and drives the tree for a scheduler."""

from __future__ import annotations

from .direct import Direct
from .polling import Polling


class PrefixCache(Polling, Direct):
    """Prefix cache of one serving engine: a radix tree over token ids plus its slot pools.

    Two ways in. Request life-cycle (leases): :meth:`admit` (match, lock, allocate) →
    :meth:`extend` (decode tokens) / :meth:`commit` (chunked prefill) / :meth:`checkpoint`
    (save a MAMBA state) / :meth:`slide_window` (release SWA slots that left the window) →
    :meth:`finish` or :meth:`abort`. Caller-held slots: :meth:`allocate` → :meth:`insert`
    or :meth:`release`. Plus :meth:`match`, :meth:`lock`/:meth:`unlock`, :meth:`evict`,
    :meth:`stats`, :meth:`take_events`, :meth:`reset`, :meth:`check_invariants`. With a
    host tier (``CacheConfig(host=...)`` and a copy engine): :meth:`poll` / :meth:`wait`
    apply the engine's acknowledgements, and ``admit(..., load_back=True)`` revives
    host-only prefixes.
    Every method validates before it mutates: when it raises, the cache is as it was.

    Threads: a PrefixCache is single-threaded. One thread (the scheduler's) makes every
    call, or the caller serialises them; nothing inside takes a lock. The one exception is
    :meth:`stats`: on a GIL build of CPython another thread (a metrics exporter) may call
    it at any time; it never raises for a concurrent mutation and never changes anything,
    but its fields are read one after another, not as one atomic snapshot (``available``
    and ``cached`` may come from either side of an admit). :meth:`snapshot`,
    :meth:`check_invariants`, :meth:`leases` and :meth:`take_events` walk or drain shared
    structures and are owner-thread only (a concurrent :meth:`snapshot` can raise
    ``RuntimeError``).
    """
