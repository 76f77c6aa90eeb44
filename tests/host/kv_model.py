"""The reference model of the host tier's stateful test: which bytes every slot row must
hold, and who owns every slot of either tier.

Each component gets one int64 row per slot on each tier, registered with the cache's
:class:`NumpyCopyEngine`. When a request computes token ``i`` it writes, into its device slot
of every per-token component, a value derived from ``(namespace, tokens[: i + 1])``; a state
saved after ``p`` tokens holds a value derived from ``(namespace, tokens[:p])``. The values
depend only on the prefix, so whoever computed a cached token, its row must hold that value:
:meth:`KVModel.check_tree` reads every value the tree holds on either tier (except the
destinations of copies still in flight) and :meth:`KVModel.check_lease` what a ready lease
reads as cached. A load-back or backup of the wrong slots, or a read before the
acknowledgement, shows up as a wrong row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from radixkv import Allocation, PrefixCache
from radixkv.cache import Lease
from radixkv.core.node import Node
from radixkv.core.tiers import DEVICE, HOST
from radixkv.host import NumpyCopyEngine

MASK = (1 << 62) - 1


def token_value(space: Any, prefix: Sequence[int]) -> int:
    """What the KV row of the last token of ``prefix`` holds (per-token components)."""
    return hash((repr(space), "kv", tuple(prefix))) & MASK


def state_value(space: Any, prefix: Sequence[int]) -> int:
    """What a state saved after ``prefix`` holds (MAMBA)."""
    return hash((repr(space), "state", tuple(prefix))) & MASK


def path_tokens(node: Node) -> list[int]:
    """Tokens from the namespace root to the end of ``node``."""
    parts = []
    while node.parent is not None:
        parts.append(node.key)
        node = node.parent
    return np.frombuffer(b"".join(reversed(parts)), dtype="<u4").tolist()


class KVModel:
    """Device and host buffers of every component of ``cache``, registered with ``engine``
    (or ``buffers``, per component the pair registered already: a cache with a storage tier
    checks its host buffers when it is built)."""

    def __init__(self, cache: PrefixCache, engine: NumpyCopyEngine,
                 buffers: list[tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        assert cache.host is not None
        self.cache = cache
        self.components = cache.tree.components
        if buffers is not None:
            self.buffers = buffers
            return
        self.buffers = []
        for index, component in enumerate(self.components):
            pair = (np.full(cache.pools[index].capacity, -1, np.int64),
                    np.full(cache.host.pools[index].capacity, -1, np.int64))
            engine.register(component.name, "device", pair[0])
            engine.register(component.name, "host", pair[1])
            self.buffers.append(pair)

    # ------------------------------------------------------------------ the engine's writes

    def compute(self, lease: Lease, start: int) -> None:
        """The engine computes the lease's tokens ``start ..``: write their rows."""
        tokens, space = lease.tokens.tolist(), lease.namespace
        for index, component in enumerate(self.components):
            if not component.per_token:
                continue
            name = component.name
            first = lease.start_of(name)
            slots = lease.slots_of(name)
            for i in range(max(start, first), len(tokens)):
                self.buffers[index][0][slots[i - first]] = token_value(space, tokens[: i + 1])

    def save_state(self, index: int, slot: int, space: Any, prefix: Sequence[int]) -> None:
        self.buffers[index][0][slot] = state_value(space, prefix)

    def fill(self, allocation: Allocation, space: Any, tokens: list[int], page: int) -> None:
        """The engine computes ``tokens`` (of namespace ``space``, as the caller gives it)
        into a caller-held allocation."""
        space = self.cache.namespace_of(space)
        for index, component in enumerate(self.components):
            part = allocation.parts[index]
            if component.per_token:
                for i, slot in enumerate(part[: len(tokens)]):
                    self.buffers[index][0][slot] = token_value(space, tokens[: i + 1])
            elif len(part):
                end = len(tokens) - len(tokens) % page
                self.save_state(index, int(part[0]), space, tokens[:end])

    # ------------------------------------------------------------------ checks

    def check_lease(self, lease: Lease) -> None:
        """A ready lease's cached prefix reads the right rows (every per-token component's
        lent slots, and the state it copies from)."""
        tokens, space, cached = lease.tokens.tolist(), lease.namespace, lease.cached_length
        for index, component in enumerate(self.components):
            device = self.buffers[index][0]
            if component.per_token:
                first = lease.start_of(component.name)
                slots = lease.slots_of(component.name)[: max(0, cached - first)]
                expected = [token_value(space, tokens[: i + 1]) for i in range(first, cached)]
                assert device[slots].tolist() == expected[: len(slots)], \
                    f"lease {lease.id} reads wrong {component.name} rows"
            elif lease.copy_state_from is not None:
                assert device[lease.copy_state_from] == state_value(space, tokens[:cached]), \
                    f"lease {lease.id} copies a wrong state"

    def check_tree(self) -> None:
        """Every value the tree holds on either tier, but a copy's destination still in
        flight, holds the rows of its tokens."""
        tree = self.cache.tree
        count = len(self.components)
        for node in tree.nodes.values():
            if node.parent is None:
                continue
            tokens = path_tokens(node)
            busy = {record.tier for record in tree.copying.get(node.id, ())}
            for tier in (DEVICE, HOST):
                if tier in busy:
                    continue
                for index in range(count):
                    value = tree.value(node, index, tier)
                    if value is not None:
                        self._check_value(node, tokens, index, tier, value)

    def _check_value(self, node: Node, tokens: list[int], index: int, tier: int,
                     value: np.ndarray) -> None:
        rows = self.buffers[index][tier][value].tolist()
        space = node.namespace
        if self.components[index].per_token:
            expected = [token_value(space, tokens[: i + 1])
                        for i in range(node.start, node.start + node.length)]
        else:
            expected = [state_value(space, tokens)]
        assert rows == expected, (f"node {node.id} holds wrong {self.components[index].name} "
                                  f"rows on tier {tier}")


def check_owners(cache: PrefixCache, leases: Iterable[Lease],
                 allocations: Iterable[Allocation]) -> None:
    """Pool accounting from the outside: on each tier, every slot of every pool is free or
    owned by exactly one holder (a tree value, a lease, a caller-held allocation; on the
    host, an L3 prefetch that reserved it)."""
    assert cache.host is not None
    tree, leases, allocations = cache.tree, list(leases), list(allocations)
    for index, component in enumerate(tree.components):
        name = component.name
        owned = [v for n in tree.nodes.values() if (v := n.values[index]) is not None]
        for lease in leases:
            if component.per_token:
                owned.append(lease.own_slots_of(name))
            else:
                states = [lease.state_slot, *lease.checkpoints.values()]
                owned.append(np.array([s for s in states if s is not None], np.int64))
        owned.extend(allocation.parts[index] for allocation in allocations)
        _owned_once(owned, cache.pools[index], f"device {name}")
        host = [v for n in tree.nodes.values() if (v := tree.value(n, index, HOST)) is not None]
        if cache.storage is not None:
            host.append(cache.storage.reserved()[index])
        _owned_once(host, cache.host.pools[index], f"host {name}")


def _owned_once(parts: list[np.ndarray], pool: Any, what: str) -> None:
    held = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    assert np.unique(held).size == held.size, f"{what}: a slot has two owners"
    assert held.size + pool.available == pool.capacity, \
        f"{what}: {held.size} owned + {pool.available} free != {pool.capacity}"
