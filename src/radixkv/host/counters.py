"""What the host tier counts, per component and in total."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.tiers import HOST


class TierCounters:
    """Per component (ledger units): ``backed_up`` / ``loaded`` completed successfully;
    batches submitted, completed and failed per direction; backups skipped for want of
    host room; tokens served from the host (load-back hits) with the requests; and faults
    of the copy engine (see :mod:`.engine_calls`)."""

    def __init__(self, count: int) -> None:
        self.backed_up = [0] * count
        self.loaded = [0] * count
        self.backup_batches = 0
        self.load_batches = 0
        self.failed_backups = 0
        self.failed_loads = 0
        self.skipped_backups = 0
        self.host_hit_tokens = 0
        self.load_requests = 0
        self.copy_faults = 0

    def submitted(self, tier: int) -> None:
        if tier == HOST:
            self.backup_batches += 1
        else:
            self.load_batches += 1

    def completed(self, tier: int, units: Sequence[int], ok: bool) -> None:
        done = self.backed_up if tier == HOST else self.loaded
        if ok:
            for index, size in enumerate(units):
                done[index] += size
        elif tier == HOST:
            self.failed_backups += 1
        else:
            self.failed_loads += 1
