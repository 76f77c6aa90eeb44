"""A test-only third tier: one more :class:`~radixkv.core.tiers.Tier` in the tree (a tree of
``tiers=3``) plus one controller that moves rows between three KV buffers. It is what a
real controller for a disk or a peer's memory would be, without the I/O: it asks the tree
for plans (``backup_plan`` down a tier, ``load_plan`` from a tier), copies the rows the
plans name, and places the copies; eviction and the audit are the tree's own.

Each tier's KV is a float array with one row per slot; a row is a function of the
namespace and the token prefix it belongs to (:func:`oracle_row`), so a load-back that
copied the wrong rows is seen."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

import numpy as np

from radixkv import CacheConfig
from radixkv.core.keys import encode_tokens
from radixkv.core.tiers import DEVICE, HOST, PRIMARY
from radixkv.core.tree import TreeCore
from radixkv.core.tree_audit import check_tree
from radixkv.core.types import TreeMatch

DISK = 2
ROW = 4


def oracle_row(namespace: str, prefix: Sequence[int]) -> np.ndarray:
    """The KV row of the last token of ``prefix`` in ``namespace``."""
    digest = hashlib.sha256(repr((namespace, tuple(prefix))).encode()).digest()
    return np.frombuffer(digest[: 4 * ROW], dtype=np.uint32).astype(np.float64)


class ThreeTiers:
    """A FULL tree over device, host and disk buffers of ``slots`` rows each; copies are
    synchronous (each verb returns with its rows copied and placed). ``reverse``: a
    negative control that copies a load-back's rows in reversed order."""

    def __init__(self, slots: int, page_size: int = 1, reverse: bool = False) -> None:
        config = CacheConfig(capacity=slots, page_size=page_size)
        self.tree = TreeCore(dataclasses.replace(config.tree_config(), tiers=3),
                             config.make_components())
        self.kv = [np.zeros((slots, ROW)) for _ in range(3)]
        self.free = [list(range(slots)) for _ in range(3)]
        self.reverse = reverse

    def take(self, tier: int, count: int) -> np.ndarray:
        if len(self.free[tier]) < count:
            raise MemoryError(f"tier {tier} has {len(self.free[tier])} free rows, not {count}")
        taken, self.free[tier] = self.free[tier][:count], self.free[tier][count:]
        return np.array(taken, dtype=np.int64)

    def give_back(self, tier: int, freed: Sequence[np.ndarray]) -> None:
        for slots in freed:
            self.free[tier].extend(int(s) for s in slots)

    def insert(self, namespace: str, tokens: list[int]) -> None:
        """Compute ``tokens`` on device (their oracle rows) and cache their whole pages."""
        tokens = tokens[: len(tokens) - len(tokens) % self.tree.page_size]
        slots = self.take(DEVICE, len(tokens))
        for position, slot in enumerate(slots):
            self.kv[DEVICE][slot] = oracle_row(namespace, tokens[: position + 1])
        result = self.tree.insert(encode_tokens(tokens), [slots], namespace)
        self.give_back(DEVICE, result.freed)

    def copy_down(self, namespace: str, tokens: list[int], source: int, to: int) -> int:
        """Copy the cached prefix of ``tokens`` from tier ``source`` to tier ``to``; the
        rows copied."""
        match = self.tree.copies.match_all_tiers(encode_tokens(tokens), namespace)
        planned = self.tree.copies.backup_plan(match.path, source, to)
        copied = 0
        for node, indices in planned:
            assert indices == (PRIMARY,)
            rows = self.tree.value(node, PRIMARY, source)
            assert rows is not None
            slots = self.take(to, len(rows))
            self.kv[to][slots] = self.kv[source][rows]
            self.tree.copies.place(node, PRIMARY, to, slots)
            copied += len(rows)
        self.tree.copies.announce(planned, to)
        return copied

    def evict(self, tier: int, budget: int) -> int:
        result = self.tree.evict([budget], tier=tier)
        self.give_back(tier, result.freed)
        return result.evicted[PRIMARY]

    def load_back(self, namespace: str, tokens: list[int]) -> TreeMatch:
        """Make the prefix of ``tokens`` that any tier holds usable on device: lock it,
        copy each value from the highest tier below the device that holds it, unlock."""
        match = self.tree.copies.match_all_tiers(encode_tokens(tokens), namespace)
        if match.node is None:
            return match
        lock = self.tree.locker.lock_match(match)
        try:
            for source in (HOST, DISK):
                for node, indices in self.tree.copies.load_plan(lock.node, match.length, source):
                    rows = self.tree.value(node, PRIMARY, source)
                    assert rows is not None and indices == (PRIMARY,)
                    slots = self.take(DEVICE, len(rows))
                    copied = self.kv[source][rows]
                    self.kv[DEVICE][slots] = copied[::-1] if self.reverse else copied
                    self.tree.copies.place(node, PRIMARY, DEVICE, slots)
        finally:
            self.tree.unlock(lock)
        return self.tree.match(encode_tokens(tokens), namespace)

    def device_rows(self, match: TreeMatch) -> np.ndarray:
        """The device KV rows a request reusing ``match`` would read."""
        return self.kv[DEVICE][self.tree.path_values(match, PRIMARY)]

    def check(self) -> None:
        """The tree's audit (its rules across the three tiers) and every tier's rows: each
        slot held once, held slots never free."""
        check_tree(self.tree)
        for tier in range(3):
            held = self.tree.all_values(PRIMARY, tier)
            assert np.unique(held).size == held.size
            assert not set(held.tolist()) & set(self.free[tier])
            assert held.size + len(self.free[tier]) == len(self.kv[tier])
