"""The lower tiers as the request life-cycle sees them: load-back at admission (a base of
the life-cycle) and leases that wait for their copies."""

from __future__ import annotations

from ..core.keys import Namespace
from ..core.node import Node
from ..core.tiers import DEVICE
from ..core.types import Lock, TreeMatch
from ..errors import EngineError, LeaseError
from ..host.engine_calls import CopyRefused
from ..host.host_controller import CopyRecord
from .cache_base import CacheBase
from .lease import Lease, LeaseState
from .lower_tier import LowerTier

Loads = list[tuple[LowerTier, list[int]]]
"""The tiers that copy part of a load-back to the device, each with its device slots per
component."""


class LoadBack(CacheBase):
    """The load-back half of admit, and the readiness check of running leases."""

    def _copy_reported(self, record: CopyRecord, ok: bool) -> None:
        """What the host tier tells the cache's :class:`~.copy_acks.CopyAcks`: a
        batch is about to be applied; a lease waiting for it is ready once it waits for
        nothing more, and fails (its slots freed, its lock released) if the copy failed."""
        for lease in self._waiting.pop(record.ticket, ()):
            if lease.state is not LeaseState.ACTIVE:
                continue
            if ok:
                lease.waiting.discard(record.ticket)
                if not lease.waiting:
                    self._changed.append(lease)
            else:
                self._fail(lease)
                self._changed.append(lease)

    def _fail(self, lease: Lease) -> None:
        lease.waiting.clear()
        self._release(lease, lease.tree_owned)
        self._close(lease, LeaseState.FAILED, "failed")

    def _release(self, lease: Lease, cached: int) -> None:
        raise NotImplementedError  # the life-cycle's

    def _close(self, lease: Lease, state: LeaseState, counter: str) -> None:
        raise NotImplementedError  # the life-cycle's

    def _check_ready(self, lease: Lease) -> None:
        if lease.waiting:
            raise LeaseError(f"lease {lease.id} waits for its load-back "
                             f"(tickets {sorted(lease.waiting)}): poll() until lease.ready")

    # ------------------------------------------------------------------ admission

    def _lower_prefix(self, key: bytes, space: Namespace, found: TreeMatch
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
        for tier in self.lower:
            sizes = tier.prepare_load(merged.node, merged.length)
            if sizes is not None:
                loads.append((tier, sizes))
        return (merged, loads) if loads else (found, None)

    @staticmethod
    def _with_loads(needs: list[int], loads: Loads) -> list[int]:
        """Per component, ``needs`` plus the device slots of every tier's load."""
        total = list(needs)
        for _tier, sizes in loads:
            total = [a + b for a, b in zip(total, sizes)]
        return total

    def _lock_and_load(self, found: TreeMatch, device_length: int,
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

    def _wait_for_loads(self, lease: Lease, path: list[Node]) -> None:
        """Make ``lease`` wait for every load-back writing to a node of its prefix."""
        copying = self.tree.copying
        for node in path:
            for record in copying.get(node.id, ()):
                if record.tier == DEVICE and record.ticket not in lease.waiting:
                    lease.waiting.add(record.ticket)
                    self._waiting.setdefault(record.ticket, []).append(lease)
