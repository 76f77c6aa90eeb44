"""The lower tiers as the request life-cycle sees them: load-back at admission (a part the
life-cycle is handed) and leases that wait for their copies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.keys import Namespace
from ..core.node import Node
from ..core.tiers import DEVICE
from ..core.types import Lock, TreeMatch
from ..errors import EngineError, LeaseError
from ..host.engine_calls import CopyRefused
from .lease import Lease
from .lower_tier import LowerTier

if TYPE_CHECKING:  # the state imports the parts' modules that build its listener
    from .cache_state import CacheState

Loads = list[tuple[LowerTier, list[int]]]
"""The tiers that copy part of a load-back to the device, each with its device slots per
component."""


class LoadBack:
    """The load-back half of admit, and the readiness check of running leases. Built on the
    cache's state: the tree, the room (which allocates a load's device slots), the waiting
    table (ticket -> leases), and ``lower``, read at each use."""

    def __init__(self, state: CacheState) -> None:
        self.state = state
        self.tree = state.tree
        self.room = state.room
        self._waiting = state._waiting

    @staticmethod
    def check_ready(lease: Lease) -> None:
        """Raise :class:`LeaseError` while ``lease`` waits for its load-back."""
        if lease.waiting:
            raise LeaseError(f"lease {lease.id} waits for its load-back "
                             f"(tickets {sorted(lease.waiting)}): poll() until lease.ready")

    # ------------------------------------------------------------------ admission

    def lower_prefix(self, key: bytes, space: Namespace, found: TreeMatch
                      ) -> tuple[TreeMatch, Loads | None]:
        """The longer prefix lower tiers' values make usable, with the device slots each
        tier's part of its load-back needs per component; ``found`` and ``None`` when they
        add nothing, or when a node of that prefix is being loaded back already (a copy
        that may still fail must not have another below or beside it). Pure."""
        merged = self.tree.copies.match_all_tiers(key, space)
        if merged.length <= found.length or merged.node is None:
            return found, None
        copying = self.tree.copying
        if copying and any(r.tier == DEVICE for n in merged.path for r in copying.get(n.id, ())):
            return found, None  # a prefix still loading is not loaded twice: admit without
        loads = []
        for tier in self.state.lower:
            sizes = tier.prepare_load(merged.node, merged.length)
            if sizes is not None:
                loads.append((tier, sizes))
        return (merged, loads) if loads else (found, None)

    @staticmethod
    def with_loads(needs: list[int], loads: Loads) -> list[int]:
        """Per component, ``needs`` plus the device slots of every tier's load."""
        total = list(needs)
        for _tier, sizes in loads:
            total = [a + b for a, b in zip(total, sizes)]
        return total

    def lock_and_load(self, found: TreeMatch, device_length: int,
                       loads: Loads) -> Lock | None:
        """Lock the merged prefix of ``found``, allocate the device slots each tier's part
        of its load-back needs (evicting: room was ensured), and submit each part, from the
        host down. ``None``, the lock released and nothing else changed but that eviction
        (and the parts of tiers above, which stay in flight on their own locks), when a
        tier's copy was refused (a counted fault): the rest is then a miss. Raises
        :class:`EngineError`, the lock released, when the engine's allocator answered out
        of contract."""
        lock = self.tree.lock_match(found)
        for tier, sizes in loads:
            try:
                tier.load(lock.node, self.room.allocate(sizes), found.length - device_length)
            except CopyRefused:
                self.tree.unlock(lock)
                return None
            except EngineError:  # the engine's allocator answered out of contract
                self.tree.unlock(lock)
                raise
        return lock

    def wait_for_loads(self, lease: Lease, path: list[Node]) -> None:
        """Make ``lease`` wait for every load-back writing to a node of its prefix."""
        copying = self.tree.copying
        for node in path:
            for record in copying.get(node.id, ()):
                if record.tier == DEVICE and record.ticket not in lease.waiting:
                    lease.waiting.add(record.ticket)
                    self._waiting.setdefault(record.ticket, []).append(lease)
