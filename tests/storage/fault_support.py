"""Checks of the cache-level fault tests: every admit is served with the right bytes, nothing
is held once the cache is closed or reset, and a prefetch can be stopped between its query
and its reads (where a test injects a fault)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from radixkv.cache import Lease, LeaseState
from radixkv.core.tiers import DEVICE, HOST
from radixkv.errors import OutOfSlotsError
from radixkv.storage import StorageTierStats
from radixkv.storage.reads import Prefetch

from ..host.kv_model import check_owners, path_tokens
from .tier_support import PAGE, ROW, Engine, kv_of, layouts

PROMPTS = [list(range(base, base + 64)) for base in (100, 300, 500, 700)]
"""Prompts of 16 pages each, no two sharing a page."""


def full_keys(tokens: list[int], name: str = "full") -> list[str]:
    """Component ``name``'s storage keys of ``tokens``' pages (the tests' layout)."""
    return layouts((name,))[0].token_keys(tokens)


def admitted(made: Engine, tokens: list[int]) -> Lease:
    """Admit with load-back, wait for the lease, and prove its cached prefix holds the rows
    of its tokens (never wrong data); audited after every call."""
    lease = made.cache.admit(tokens, load_back=True)
    made.audited()
    made.cache.wait(lease)
    made.audited()
    assert lease.state is LeaseState.ACTIVE and lease.ready
    assert lease.cached_length % PAGE == 0
    lease_rows_right(made, lease)
    return lease


def state_of(tokens: list[int]) -> np.ndarray:
    """The MAMBA state an engine saves after ``tokens`` (exact in float32)."""
    return np.full(ROW, sum(tokens) * 64 + len(tokens), np.float32)


def per_token(made: Engine) -> list[str]:
    """The per-token components: the ones whose rows are ``kv_of``."""
    return [c.name for c in made.cache.tree.components if c.per_token]


def lease_rows_right(made: Engine, lease: Lease) -> None:
    """A ready lease's cached prefix holds the rows of its tokens, in every per-token
    component (a window component: from the first token it still lends)."""
    cached, rows = lease.cached_length, kv_of(lease.tokens.tolist())
    for name in per_token(made):
        first = lease.start_of(name)
        slots = lease.slots_of(name)[: max(0, cached - first)]
        np.testing.assert_array_equal(made.device[name][slots],
                                      rows[first : first + len(slots)], name)
    source = lease.copy_state_from
    if source is not None:
        np.testing.assert_array_equal(made.device["mamba"][source],
                                      state_of(lease.tokens.tolist()[:cached]))


def tree_rows_right(made: Engine) -> None:
    """Every value the tree holds, on either tier, holds the rows of its tokens (a MAMBA
    value: the state after them), but a copy's destination still in flight: what came from
    L3 included."""
    tree = made.cache.tree
    for node in tree.nodes.values():
        if node.parent is None:
            continue
        busy = {record.tier for record in tree.copying.get(node.id, ())}
        tokens = path_tokens(node)
        for component in tree.components:
            name = component.name
            expected = kv_of(tokens)[node.start:] if component.per_token else \
                state_of(tokens)[None]
            for where, buffer in ((DEVICE, made.device[name]), (HOST, made.host[name])):
                value = tree.value(node, component.index, where)
                if value is not None and where not in busy:
                    np.testing.assert_array_equal(buffer[value], expected,
                                                  f"node {node.id} {name} on tier {where}")


def computed(made: Engine, lease: Lease) -> None:
    """The engine computes what the lease did not reuse: every per-token component's rows,
    and with MAMBA the state at its last page end, checkpointed (skipped without room)."""
    tokens = lease.tokens.tolist()
    cached, rows = lease.cached_length, kv_of(tokens)
    for name in per_token(made):
        first = lease.start_of(name)
        begin = max(cached, first)
        made.device[name][lease.slots_of(name)[begin - first :]] = rows[begin:]
    end = len(tokens) - len(tokens) % PAGE
    if "mamba" in made.device and end > lease.tree_owned and end not in lease.checkpoints:
        try:
            slot = made.cache.checkpoint(lease, end)
        except OutOfSlotsError:
            made.audited()
            return
        made.device["mamba"][slot] = state_of(tokens[:end])


def finished(made: Engine, lease: Lease, tokens: list[int]) -> None:
    """Compute what the lease did not reuse, finish it, poll (writes go out)."""
    assert lease.tokens.tolist() == tokens
    computed(made, lease)
    made.cache.finish(lease)
    made.audited()
    made.cache.poll()
    made.audited()


def served(made: Engine, tokens: list[int]) -> int:
    """Serve one request end to end (:func:`admitted`, then :func:`finished`); the cached
    length it started with."""
    lease = admitted(made, tokens)
    finished(made, lease, tokens)
    return lease.cached_length


def settled(made: Engine) -> None:
    """Wait for the storage tier's I/O: queued writes landed, prefetches dropped."""
    assert made.cache.storage is not None
    made.cache.storage.settle()
    made.audited()


def written(open_engine: Callable[[], Engine], *prompts: list[int]) -> None:
    """A first engine serves ``prompts`` (all misses), writes them whole, and closes."""
    first = open_engine()
    for tokens in prompts:
        assert served(first, tokens) == 0
    settled(first)
    assert tier(first).written_pages == 16 * len(prompts)
    closed(first)


def tier(made: Engine) -> StorageTierStats:
    stats = made.cache.stats().storage
    assert stats is not None
    return stats


def faults(made: Engine) -> dict[str, int]:
    """The store's fault counters, with the kinds never seen left out."""
    return {kind: count for kind, count in tier(made).backend.faults.items() if count}


def queried(made: Engine, tokens: list[int]) -> Prefetch:
    """Start a prefetch of ``tokens`` and wait for its query only: its reads have not been
    submitted (no poll ran), so a fault injected now hits them."""
    storage = made.cache.storage
    assert storage is not None and made.cache.prefetch(tokens)
    made.audited()
    (record,) = storage.pending.values()
    assert record.query is not None
    record.query.result(10)
    return record


def nothing_held(made: Engine) -> None:
    """Every host and device slot is free or a tree value's; no prefetch reserves any."""
    made.audited()
    storage = made.cache.storage
    if storage is not None:
        assert not storage.pending and not storage.draining
    check_owners(made.cache, [], [])
    tree_rows_right(made)


def closed(made: Engine) -> None:
    """Close (settle the I/O, close the store) and check nothing leaked."""
    made.cache.close()
    nothing_held(made)
    assert made.cache.storage is None


def reset_whole(made: Engine) -> None:
    """Reset and check both tiers' pools are whole again."""
    made.cache.reset()
    nothing_held(made)
    stats = made.cache.stats()
    assert stats.host is not None
    for component in stats.host.components.values():
        assert component.pool_available == component.pool_capacity
    assert all(pool.available == pool.capacity for pool in made.cache.pools.pools)
