"""The host tier as the request life-cycle sees it: load-back at admission (a base of the
life-cycle) and leases that wait for their copies."""

from __future__ import annotations

from ..core.keys import Namespace
from ..core.node import Node
from ..core.tiers import DEVICE
from ..core.types import Lock, TreeMatch
from ..errors import LeaseError
from ..host.engine_calls import CopyRefused
from ..host.host_controller import CopyRecord
from .cache_base import CacheBase
from .lease import Lease, LeaseState


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

    def _from_storage(self, key: bytes, space: Namespace) -> bool:
        """Ask L3 for more of ``key`` and take what arrives within the wait policy; returns
        whether the fetch is still in flight afterwards."""
        storage = self.storage
        assert storage is not None
        record = storage.prefetch(key, space)
        if record is None:
            return False
        storage.take(record, storage.wait_seconds())
        return record.tag in storage.pending

    def _host_prefix(self, key: bytes, space: Namespace, found: TreeMatch
                     ) -> tuple[TreeMatch, list[int] | None]:
        """The longer prefix host values make usable, with the device slots its load-back
        needs per component; ``found`` and ``None`` when the host adds nothing, or when a
        node of that prefix is being loaded back already (a copy that may still fail must
        not have another below or beside it). Pure."""
        host = self.host
        assert host is not None
        merged = self.tree.match_all_tiers(key, space)
        if merged.length <= found.length or merged.node is None:
            return found, None
        copying = self.tree.copying
        if copying and any(r.tier == DEVICE for n in merged.path for r in copying.get(n.id, ())):
            return found, None  # a prefix still loading is not loaded twice: admit without
        return merged, host.load_sizes(merged.node, merged.length)

    def _lock_and_load(self, found: TreeMatch, device_length: int,
                       sizes: list[int]) -> Lock | None:
        """Lock the merged prefix of ``found``, allocate the ``sizes`` device slots its
        load-back needs (evicting: room was ensured), and submit it. ``None``, the lock
        released and nothing else changed but that eviction, when the copy engine refused
        the batch (a counted fault): the host part is then a miss."""
        host = self.host
        assert host is not None
        lock = self.tree.lock_match(found)
        try:
            loaded = host.load(lock.node, self.room.allocate(sizes))
        except CopyRefused:
            self.tree.unlock(lock)
            return None
        if loaded is not None:
            host.counters.load_requests += 1
            host.counters.host_hit_tokens += found.length - device_length
        return lock

    def _wait_for_loads(self, lease: Lease, path: list[Node]) -> None:
        """Make ``lease`` wait for every load-back writing to a node of its prefix."""
        copying = self.tree.copying
        for node in path:
            for record in copying.get(node.id, ()):
                if record.tier == DEVICE and record.ticket not in lease.waiting:
                    lease.waiting.add(record.ticket)
                    self._waiting.setdefault(record.ticket, []).append(lease)
