"""Helpers of the step-by-step host tier tests (beside support.py: these use NumpyCopyEngine).

:class:`TierCache` is the audited cache of the scenario tests with a host tier and a
:class:`NumpyCopyEngine` (delayed on request): ``check_invariants()`` audits both tiers and
the copies in flight after every call that may mutate it, also when the call raises. A fresh
pool hands out slots 0, 1, 2... in ascending order and reuses freed pages FIFO, so slot ids
in these tests follow from the steps before them. :func:`kv_buffers` registers real numpy
buffers (one row per slot) so that tests can check the bytes a copy moved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from radixkv import CacheConfig, PrefixCache
from radixkv.core.keys import DEFAULT_NAMESPACE
from radixkv.host import HostTier, NumpyCopyConfig, NumpyCopyEngine

from ..components.support import AuditedCache


class TierCache(AuditedCache):
    """An audited PrefixCache with a host tier of ``host`` and the copy engine ``engine``."""

    def __init__(self, engine: NumpyCopyEngine | None = None, *, host: HostTier,
                 **config: Any) -> None:
        self.engine = NumpyCopyEngine() if engine is None else engine
        self.cache = PrefixCache(CacheConfig(host=host, **config), self.engine)
        self.audit()


def demoted(polls: int, capacity: int = 32, policy: str = "write_through",
            prompts: tuple[list[int], ...] = (list(range(8)),)) -> TierCache:
    """A FULL cache (host tier of 32 slots) whose ``prompts`` were cached, backed up and
    demoted: they live on the host only."""
    cache = TierCache(delayed(polls), capacity=capacity,
                      host=HostTier(capacity=32, write_policy=policy))
    for tokens in prompts:
        cache.finish(cache.admit(tokens))
        settle(cache)
    cache.evict(full=capacity)
    return cache


class PollClock:
    """A fake ``HostTier.clock``: one second per reading. A wait reads the clock once for
    its deadline and once before each round of polls, so ``wait_timeout_s=n`` gives up
    after exactly ``n`` rounds: a count of polls, the same on any machine, however loaded."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def delayed(polls: int, **config: Any) -> NumpyCopyEngine:
    """A copy engine whose batches complete on the ``polls + 1``-th poll."""
    return NumpyCopyEngine(NumpyCopyConfig(delay_polls=polls, **config))


def kv_buffers(engine: NumpyCopyEngine, name: str, device: int, host: int,
               width: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Register zeroed device and host buffers of ``name`` (rows = slots) and return them."""
    arrays = np.zeros((device, width), np.int64), np.zeros((host, width), np.int64)
    engine.register(name, "device", arrays[0])
    engine.register(name, "host", arrays[1])
    return arrays


def node_at(cache: Any, tokens: list[int]) -> int:
    """The handle of the node ``tokens`` end in (either tier), read without a match (no
    hit counted, no recency)."""
    key = np.asarray(tokens, dtype="<u4").tobytes()
    found = cache.tree.copies.match_all_tiers(key, DEFAULT_NAMESPACE)
    assert found.node is not None and found.length == len(tokens)
    node_id: int = found.node.id
    return node_id


def host_of(cache: Any, node_id: Any, index: int = 0) -> list[int] | None:
    """Component ``index``'s host value on a node, as a list (``None``: none)."""
    tree = cache.tree
    value = tree.value(tree.node(node_id), index, 1)
    return None if value is None else value.tolist()


def device_of(cache: Any, node_id: Any, index: int = 0) -> list[int] | None:
    """Component ``index``'s device value on a node, as a list (``None``: none)."""
    tree = cache.tree
    value = tree.value(tree.node(node_id), index)
    return None if value is None else value.tolist()


def nodes(cache: Any) -> list[tuple[int, int, list[int] | None, list[int] | None]]:
    """Every node but the roots, by start then id: (start, end, device FULL, host FULL)."""
    tree = cache.tree
    rows = [(n.start, n.end, device_of(cache, n.id), host_of(cache, n.id))
            for n in sorted(tree.nodes.values(), key=lambda n: (n.start, n.id))
            if n.parent is not None]
    return rows


def settle(cache: Any) -> None:
    """Wait until no copy is in flight and no backup is due (a node below a backup in
    flight is backed up by the first flush, a poll, after that copy landed)."""
    while cache.host.records or cache.host.due:
        cache.wait()
        cache.poll()


class ProbeEngine(NumpyCopyEngine):
    """A NumpyCopyEngine that, at each poll, first records what ``probe()`` reads of the
    cache (set by the test): how the cache looks while a copy is still in flight, seen
    from inside a call (an eviction) that waits for it."""

    def __init__(self, polls: int) -> None:
        super().__init__(NumpyCopyConfig(delay_polls=polls))
        self.probe: Any = None
        self.seen: list[Any] = []

    def poll(self) -> list[Any]:
        if self.probe is not None:
            self.seen.append(self.probe())
        done = super().poll()
        if self.probe is not None and done:
            self.seen.append(("acknowledged", [c.ticket for c in done]))
        return done


def host_counters(cache: Any) -> dict[str, int]:
    """The host tier's copy counters (stats().host), by name."""
    host = cache.stats().host
    names = ("backup_batches", "load_batches", "copies_in_flight", "failed_backups",
             "failed_loads", "skipped_backups", "host_hit_tokens", "load_requests")
    return {name: getattr(host, name) for name in names}


def host_ledger(cache: Any, name: str = "full") -> dict[str, int]:
    """One component's host ledger (stats().host): cached, evictable, protected, pool
    available, backed_up, loaded."""
    c = cache.stats().host.components[name]
    return {"cached": c.cached, "evictable": c.evictable, "protected": c.protected,
            "available": c.pool_available, "backed_up": c.backed_up, "loaded": c.loaded}
