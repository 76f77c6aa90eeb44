"""The cache's ear for the host tier's copies: the leases waiting for a load-back hear of it."""

from __future__ import annotations

from collections.abc import Callable

from ..host.host_controller import CopyRecord
from .lease import Lease, LeaseState

EndLease = Callable[[Lease, int, LeaseState, str], None]
"""How a lease ends: ``CacheState._end_lease(lease, cached, state, counter)``."""


class CopyAcks:
    """The cache's :class:`~radixkv.host.parts.CopyListener`, handed to the host tier at
    construction: a part of its own, so that the cache's public surface stays the request
    API. The host tier calls it alone. Built with the cache's waiting table (ticket -> the
    leases waiting for it), the list of leases changed since the last poll, and how a lease
    ends."""

    __slots__ = ("_changed", "_end_lease", "_waiting")

    def __init__(self, waiting: dict[int, list[Lease]], changed: list[Lease],
                 end_lease: EndLease) -> None:
        self._waiting, self._changed, self._end_lease = waiting, changed, end_lease

    def copy_reported(self, record: CopyRecord, ok: bool) -> None:
        """A batch is about to be applied: a lease waiting for ``record``'s copy is ready
        once it waits for nothing more, and fails (its slots freed, its lock released,
        state ``FAILED``) if the copy failed; either way :meth:`PrefixCache.poll` reports
        it."""
        for lease in self._waiting.pop(record.ticket, ()):
            if lease.state is not LeaseState.ACTIVE:
                continue
            if ok:
                lease.waiting.discard(record.ticket)
                if not lease.waiting:
                    self._changed.append(lease)
            else:
                lease.waiting.clear()
                self._end_lease(lease, lease.tree_owned, LeaseState.FAILED, "failed")
                self._changed.append(lease)
