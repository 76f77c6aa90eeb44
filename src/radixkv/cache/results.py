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
    """

    length: int
    slots: np.ndarray
    node: NodeId | None
    host_length: int = 0
    mamba_slot: int | None = None


@dataclass(frozen=True, slots=True)
class ComponentStats:
    """Size ledger of one component, in its units (tokens for FULL)."""

    cached: int
    evictable: int
    protected: int


@dataclass(frozen=True, slots=True)
class CacheStats:
    """A snapshot of the cache's counters; see :meth:`PrefixCache.stats`."""

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

    @property
    def hit_rate(self) -> float:
        """Share of matched-for tokens that were cached (0.0 before any match)."""
        return self.hit_tokens / self.match_tokens if self.match_tokens else 0.0
