"""What PrefixCache hands back to its caller."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.types import NodeId


@dataclass(frozen=True, slots=True)
class MatchResult:
    """The longest cached prefix usable by every component.

    ``length``: tokens of the prompt whose KV state is cached. ``slots``: the FULL slot ids of
    those tokens (a fresh array the caller may keep). ``node``: handle of the node where the
    prefix ends (``None`` when ``length`` is 0). ``host_length``: further tokens available on
    the host tier. ``mamba_slot``: the state slot to copy from, if any.
    ``checkpoint_hints``: positions where a request with this prompt should save MAMBA
    states so that later requests hit (empty without MAMBA).
    """

    length: int
    slots: np.ndarray
    node: NodeId | None
    host_length: int = 0
    mamba_slot: int | None = None
    checkpoint_hints: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ComponentStats:
    """One component's ledger, in its units (tokens for FULL and SWA, states for MAMBA):
    ``cached`` = ``evictable`` (unlocked) + ``protected`` (locked); ``evicted`` by reason —
    ``budget`` (asked for), ``cascade`` (a heavier component's eviction took it along),
    ``removal`` (its node was removed whole)."""

    cached: int
    evictable: int
    protected: int
    pool_capacity: int
    pool_available: int
    evicted: dict[str, int]


@dataclass(frozen=True, slots=True)
class CacheStats:
    """A snapshot of the cache's counters; see :meth:`PrefixCache.stats`. ``capacity``,
    ``available`` and ``held_by_requests`` are FULL slots; ``hit_tokens`` counts prompt
    tokens served from the cache by ``match`` and ``admit``; ``evicted_tokens`` counts FULL
    tokens evicted for any reason, since the cache was built."""

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
    inserted_tokens: int = 0
    evicted_tokens: int = 0
    checkpoints_created: int = 0
    checkpoints_used: int = 0

    @property
    def hit_rate(self) -> float:
        """Share of matched-for tokens that were cached (0.0 before any match)."""
        return self.hit_tokens / self.match_tokens if self.match_tokens else 0.0
