"""LowerTier: the one interface the cache drives every tier below the device through."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

import numpy as np

from ..core.events import KVEvent
from ..core.keys import Namespace
from ..core.node import Node


class LowerTier(Protocol):
    """A tier below the device as a :class:`~radixkv.PrefixCache` drives it: the host tier
    (:class:`~radixkv.host.host_controller.HostTierController`), the storage tier below it
    (:class:`~radixkv.storage.storage_controller.StorageTierController`), or a third one.

    The cache holds them in a tuple, from the device down (``PrefixCache.lower``), built by
    :func:`~radixkv.cache.tier_parts.build_tiers`, and calls each verb on every tier in that
    order (where a verb says otherwise, the cache's call says why); a verb a tier has no
    part in does nothing. The tree decides what a copy moves
    (:mod:`radixkv.core.copy_plans`); a tier carries it out, on the caller's thread
    (owner-thread only, as the cache is), without blocking except where a verb says it
    waits. Every verb leaves the tree, the pools and the tier consistent when it raises;
    what a tier's engine or store raises or answers is the tier's to contain (counted as a
    fault), never passed on except as the errors named here. Costs are O(nodes copied x
    components) plus the engine's or store's own, unless a verb says otherwise.
    """

    name: str
    """The field of :class:`~radixkv.cache.results.CacheStats` its :meth:`stats` fill."""

    def lookup(self, key: bytes, namespace: Namespace) -> None:
        """Before an admission with load-back matches ``key``: bring what this tier holds
        of it up to the tier above, within the tier's wait policy (what arrives joins the
        tree there and stays cached whatever the admission does next). Mutates the tree
        and the tier above's pools."""

    def prepare_load(self, node: Node, end: int) -> list[int] | None:
        """Per component, the device slots this tier's part of a load-back of ``[0, end)``
        ending in ``node`` needs (before the lock splits ``node`` at ``end``); ``None`` when
        this tier copies nothing to the device. Pure."""

    def load(self, node: Node, parts: Sequence[np.ndarray], gained: int) -> object:
        """Copy this tier's part of the load-back of the prefix ending at ``node``'s end
        (``node`` is locked) into ``parts``, the device slots :meth:`prepare_load` named
        (they are the load's now: freed by the tier when nothing or a failed copy needs
        them); ``gained``: the tokens the load-back adds to the device prefix, for its
        counters. The lease that needs it waits for the copy's ticket, which it finds in
        ``TreeCore.copying``. Raises :class:`~radixkv.host.engine_calls.CopyRefused`
        (``parts`` freed, nothing else changed) when the copy was refused. What it returns
        is the tier's own."""

    def complete_load(self, tickets: Collection[int] | None) -> None:
        """Block until the load-backs of ``tickets`` that this tier submitted landed, and
        apply them (a lease waiting for them hears of it); with ``None``, until nothing of
        this tier is in flight any more, its reads into the tier above taken in. Raises the
        tier's timeout error (:class:`CopyEngineError`, :class:`StorageTimeoutError`) with
        what did not land still in flight."""

    def prepare_store(self, nodes: Sequence[Node]) -> None:
        """``nodes`` were hit by a match or stored by an insert: note them for the tier's
        write policy. O(nodes)."""

    def complete_store(self) -> None:
        """Start the copies down to this tier that its write policy made due."""

    def poll(self) -> None:
        """Apply what completed since the last poll, without blocking."""

    def settle(self) -> None:
        """Block until nothing of this tier is in flight: copies applied, reads not yet
        taken in dropped (their slots freed), writes landed (before :meth:`reset` or
        :meth:`close`). Raises the tier's timeout error with nothing dropped."""

    def take_events(self) -> list[KVEvent]:
        """Drain the events this tier publishes on a topic of its own (the tree's own KV
        events are ``PrefixCache.take_events``')."""

    def stats(self) -> object:
        """A snapshot of the tier's counters and ledgers (:attr:`name`'s field of
        ``CacheStats``); plain reads, safe from a metrics thread."""

    def reserved(self) -> list[np.ndarray] | None:
        """Per component, the slots of the tier above that this tier holds outside the tree
        (reads in flight into them); ``None``: none. Pure."""

    def check(self, reserved: Sequence[np.ndarray] | None) -> None:
        """Raise :class:`InvariantError` on the first inconsistency of the tier with the
        tree; ``reserved``: the tier below's :meth:`reserved` of this tier's slots. Pure,
        O(nodes + slots)."""

    def snapshot(self) -> object:
        """What ``PrefixCache.snapshot`` shows of the tier, as plain data; pure."""

    def reset(self) -> None:
        """Forget every value of this tier (the caller settled every tier first, and resets
        the tree and the device pools)."""

    def close(self) -> bool:
        """End the tier's I/O and release what it holds outside this process; whether it is
        closed: the cache then drops it and serves on without it (a tier in this process's
        memory stays: ``False``). Raises the tier's timeout error with the tier open, so
        close can be called again."""
