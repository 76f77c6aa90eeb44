"""What the host tier is built with: the Protocols of the collaborators it calls, each
handed to :class:`~radixkv.host.host_controller.HostTierController` at construction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..core.copy_plans import Planned
from ..core.node import Node

if TYPE_CHECKING:
    from .host_controller import CopyRecord


class DeviceSlots(Protocol):
    """The device pools as the host tier uses them (a cache's ``ComponentPools``): it
    frees what a load-back no longer needs (a refused batch, a failed copy)."""

    def free_all(self, slots: Sequence[np.ndarray]) -> None:
        """Give each component's slots back."""


class CopyListener(Protocol):
    """Who hears of each batch the copy engine reported (the cache: leases wait for their
    load-backs)."""

    def copy_reported(self, record: CopyRecord, ok: bool) -> None:
        """The engine reported ``record`` (``ok``: every copy landed); called before the
        host tier applies it, whichever call (a poll, a wait inside eviction) applies it."""


class HostSink(Protocol):
    """Where host values go further down (the storage tier's writes, L3)."""

    def backed_up(self, planned: Planned) -> None:
        """A backup of ``planned`` (nodes, top-down, with the components copied) was
        acknowledged: their host values are in place."""

    def dropping(self, node: Node, index: int, slots: np.ndarray) -> None:
        """Host eviction is about to drop component ``index``'s host value ``slots`` of
        ``node`` (still linked; the slots are freed right after)."""
