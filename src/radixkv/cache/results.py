"""What PrefixCache hands back to its caller."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core.tiers import LedgerStats
from ..core.types import NodeId

if TYPE_CHECKING:
    from ..components import Component
    from ..host.host_stats import HostStats
    from ..storage.tier_stats import StorageTierStats

PRIMARY = 0
"""Index of the primary component (FULL): the configuration lists it first."""


HintInputs = tuple[int, int, "Component"]
"""``(branch, num_tokens, state component)``: what the state component's
``checkpoint_hints`` needs besides the match length, kept by a match result until read."""


class MatchResult:
    """The longest cached prefix usable by every component (read-only by convention).

    ``length``: tokens of the prompt whose KV state is cached. ``slots``: the primary (FULL)
    slot ids of those tokens, a fresh array the caller may keep; the ids stay valid only
    while the prefix is locked (``lock(result)`` or an admitted lease) or, unlocked, until
    the cache's next mutation (any eviction may free them). ``node``: handle of the node
    where the prefix ends (``None`` when ``length`` is 0). ``host_length``: further tokens
    available on the host tier. ``mamba_slot``: the state slot to copy from, if any (valid
    under the same rule). ``checkpoint_hints``: positions where a request with this prompt
    should save states so that later requests hit (empty without a state component).
    ``loading``: tickets of load-backs (another request's) still writing KV into part of
    this prefix; its slots hold that KV only once :meth:`PrefixCache.poll` has applied them
    (a lease waits for them itself; empty without a host tier).
    """

    __slots__ = ("_hint_inputs", "_path_values", "_slots", "_state", "host_length", "length",
                 "loading", "node")

    def __init__(
        self, length: int, path_values: list[list[np.ndarray | None]], node: NodeId | None,
        state: np.ndarray | None = None, hint_inputs: HintInputs | None = None,
        host_length: int = 0,
    ) -> None:
        self.length, self._path_values, self.node = length, path_values, node
        self._state, self._hint_inputs, self.host_length = state, hint_inputs, host_length
        self._slots: np.ndarray | None = None
        self.loading: tuple[int, ...] = ()

    # bench match_prefix: slots, the state slot and the hints are computed only when read,
    # from what the match captured: the nodes' values lists along the path (never changed
    # in place, see Node), the state array (never written) and plain ints
    @property
    def slots(self) -> np.ndarray:
        if self._slots is None:
            parts = [values[PRIMARY] for values in self._path_values]
            joined = np.concatenate(parts) if parts else np.zeros(0, np.int64)  # type: ignore[arg-type]
            self._slots = joined[: self.length]
        return self._slots

    @property
    def mamba_slot(self) -> int | None:
        return None if self._state is None else int(self._state[0])

    @property
    def checkpoint_hints(self) -> tuple[int, ...]:
        if self._hint_inputs is None:
            return ()
        branch, num_tokens, component = self._hint_inputs
        return component.checkpoint_hints(self.length, branch, num_tokens)

    def __repr__(self) -> str:
        return (f"MatchResult(length={self.length}, slots={self.slots!r}, node={self.node}, "
                f"host_length={self.host_length}, mamba_slot={self.mamba_slot}, "
                f"checkpoint_hints={self.checkpoint_hints})")


@dataclass(frozen=True, slots=True)
class ComponentStats(LedgerStats):
    """One component's device ledger (:class:`~radixkv.core.tiers.LedgerStats`: ``cached``
    = ``evictable`` + ``protected``, the pool, ``evicted`` by reason) and ``lost``: prompt
    tokens (key elements) the tree held structurally that this component made unusable in
    a match or admit, for its reason ``lost_reason`` (the component's: FULL evicted, SWA
    tombstone, MAMBA without a state at the needed position)."""

    lost: int = 0
    lost_reason: str = "cut"


@dataclass(frozen=True, slots=True)
class CacheStats:
    """A snapshot of the cache's counters; see :meth:`PrefixCache.stats`. ``capacity``,
    ``available`` and ``held_by_requests`` are FULL slots; ``hit_tokens`` counts prompt
    tokens served from the cache by ``match`` and ``admit``; ``evicted_tokens`` counts FULL
    tokens evicted for any reason, since the cache was built. Every queried token is either
    a hit, ``lost`` by a component (see :class:`ComponentStats`), ``capped_tokens`` (held,
    but past an admit's ``max_match``), or :attr:`unseen_tokens`. ``events_dropped``: KV
    events discarded because the event queue was full. ``failed``: leases failed by a
    load-back. ``host``: the host tier's ledgers and copy counters
    (:class:`~radixkv.host.host_stats.HostStats`), ``None`` without one; ``storage``: the
    storage tier's (:class:`~radixkv.storage.StorageTierStats`), ``None`` without one."""

    capacity: int
    available: int
    held_by_requests: int
    components: dict[str, ComponentStats]
    nodes: int
    active_leases: int
    matches: int = 0
    match_tokens: int = 0
    hit_tokens: int = 0
    admitted: int = 0
    finished: int = 0
    aborted: int = 0
    failed: int = 0
    inserted_tokens: int = 0
    evicted_tokens: int = 0
    checkpoints_created: int = 0
    checkpoints_used: int = 0
    capped_tokens: int = 0
    events_dropped: int = 0
    host: HostStats | None = None
    storage: StorageTierStats | None = None

    @property
    def unseen_tokens(self) -> int:
        """Queried tokens the tree did not hold at all (including partial last pages)."""
        lost = sum(component.lost for component in self.components.values())
        return self.match_tokens - self.hit_tokens - lost - self.capped_tokens

    @property
    def hit_rate(self) -> float:
        """Share of matched-for tokens that were cached (0.0 before any match)."""
        return self.hit_tokens / self.match_tokens if self.match_tokens else 0.0
