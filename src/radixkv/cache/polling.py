"""poll and wait: how a cache with a host tier learns that its copies landed."""

from __future__ import annotations

from .lease import Lease
from .lifecycle import Lifecycle


class Polling(Lifecycle):
    """poll / wait: the acknowledgements of the host tier's copies."""

    def poll(self) -> list[Lease]:
        """Apply the copies the engine acknowledged since the last poll: backed-up and
        loaded nodes are unlocked, failed copies give their slots back. Returns the leases
        that became ready, and those that failed (state ``FAILED``: a load-back they needed
        failed; the prefix reads as before the load, host values intact; admit again).
        Without a host tier, returns ``[]``. Cost: O(nodes copied)."""
        if self.host is None:
            return []
        self.host.poll()
        self.host.flush()
        return self._take_changed()

    def wait(self, lease: Lease | None = None) -> list[Lease]:
        """Block until ``lease`` is ready (or failed), or with no lease until no copy is in
        flight; returns what :meth:`poll` would. Raises :class:`LeaseError` for a lease
        this cache does not hold."""
        if self.host is None:
            return []
        if lease is None:
            tickets = list(self.host.records)
        else:
            self._check_active(lease)
            tickets = list(lease.waiting)
        self.host.wait(tickets)
        return self._take_changed()

    def _take_changed(self) -> list[Lease]:
        changed, self._changed = self._changed, []
        return changed
