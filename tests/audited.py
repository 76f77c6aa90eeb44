"""AuditedCache: the PrefixCache wrapper every scenario test drives, so that
``check_invariants()`` (and any extra audit) runs after every call that may mutate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import RadixKVError

PURE = frozenset({"stats", "snapshot", "check_invariants", "take_events", "leases"})


class AuditedCache:
    """A PrefixCache whose every mutating call is followed by :meth:`audit` (also when the
    call raises). Subclasses extend :meth:`audit`."""

    def __init__(self, **config: Any) -> None:
        self.cache = PrefixCache(CacheConfig(**config))
        self.audit()

    def audit(self) -> None:
        self.cache.check_invariants()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.cache, name)
        if name in PURE or not callable(attr):
            return attr

        def audited(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            finally:
                self.audit()

        return audited


def assert_refused(cache: Any, error: type[Exception], call: Callable[[], object],
                   match: str | None = None) -> Exception:
    """``call()`` raises ``error`` (a RadixKVError; its message matching ``match``) and the
    cache's snapshot is exactly as before; returns the exception."""
    snap = cache.snapshot()
    with pytest.raises(error, match=match) as raised:
        call()
    assert isinstance(raised.value, RadixKVError), f"{raised.value!r} is no RadixKVError"
    assert cache.snapshot() == snap, "a refused call changed the cache"
    return raised.value


def id_free_state(cache: Any) -> Any:
    """What two caches given the same calls must agree on, without node and lock ids (ids
    are global): every node's place, key, locks, recency, priority, values and candidacy,
    the ledgers, the pools and the hit count."""
    tree, nodes = cache.tree, []
    stack = list(tree.roots.values())
    while stack:
        node = stack.pop()
        stack.extend(node.children.values())
        nodes.append((node.namespace, node.start, node.key, tuple(node.locks), node.last_access,
                      node.priority, tuple(None if v is None else v.tobytes() for v in node.values),
                      tuple(node.id in queue.members for queue in tree.queues)))
    pools = tuple(pool.available for pool in cache.pools.pools)
    return (sorted(nodes), tree.protected, tree.cached, tree.holes, pools,
            cache.stats().hit_tokens)
