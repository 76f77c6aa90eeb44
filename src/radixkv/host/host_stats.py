"""What ``PrefixCache.stats()`` reports of the host tier."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.tiers import HOST, LedgerStats, ledger_fields

if TYPE_CHECKING:
    from ..core.tree import TreeCore
    from .host_controller import HostTierController


@dataclass(frozen=True, slots=True)
class HostComponentStats(LedgerStats):
    """One component's host ledger (:class:`~radixkv.core.tiers.LedgerStats`, as on the
    device; ``protected``: host values on nodes it has locked) and ``backed_up`` /
    ``loaded``: units copied to the host / back to the device by acknowledged copies."""

    backed_up: int
    loaded: int


@dataclass(frozen=True, slots=True)
class HostStats:
    """The host tier: per component (:class:`HostComponentStats`), the batches submitted
    each way, the copies in flight now, failed batches, backups skipped for want of host
    room, the prompt tokens served by load-back (``host_hit_tokens``, also counted in
    ``CacheStats.hit_tokens``) over ``load_requests`` admissions, and ``copy_faults``: the
    copy engine's answers refused or ignored (a submit that raised or gave no valid ticket,
    a poll that raised or reported garbage, an ``ok`` that was no bool)."""

    write_policy: str
    components: dict[str, HostComponentStats]
    backup_batches: int
    load_batches: int
    copies_in_flight: int
    failed_backups: int
    failed_loads: int
    skipped_backups: int
    host_hit_tokens: int
    load_requests: int
    copy_faults: int


def host_stats(host: HostTierController, tree: TreeCore) -> HostStats:
    """Read the host tier's ledgers and counters; O(nodes) (the host ``protected``
    ledger is summed on demand)."""
    tier, counters = tree.tiers[HOST], host.counters
    protected = tree.copies.protected_on(HOST)
    components = {
        component.name: HostComponentStats(
            *ledger_fields(tier, component.index, protected[component.index],
                           host.pools[component.index]),
            backed_up=counters.backed_up[component.index],
            loaded=counters.loaded[component.index])
        for component in tree.components}
    return HostStats(
        write_policy=host.config.policy.value, components=components,
        backup_batches=counters.backup_batches, load_batches=counters.load_batches,
        copies_in_flight=len(host.records), failed_backups=counters.failed_backups,
        failed_loads=counters.failed_loads, skipped_backups=counters.skipped_backups,
        host_hit_tokens=counters.host_hit_tokens, load_requests=counters.load_requests,
        copy_faults=counters.copy_faults)
