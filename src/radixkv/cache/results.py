"""What PrefixCache hands back to its caller."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.types import NodeId


class MatchResult:
    """The longest cached prefix usable by every component (read-only by convention).

    ``length``: tokens of the prompt whose KV state is cached. ``slots``: the FULL slot ids of
    those tokens (a fresh array the caller may keep; concatenated on first access, from the
    arrays the match found). ``node``: handle of the node where the prefix ends (``None``
    when ``length`` is 0). ``host_length``: further tokens available on the host tier.
    ``mamba_slot``: the state slot to copy from, if any. ``checkpoint_hints``: positions
    where a request with this prompt should save MAMBA states so that later requests hit
    (empty without MAMBA).
    """

    __slots__ = ("_parts", "_slots", "checkpoint_hints", "host_length", "length",
                 "mamba_slot", "node")

    def __init__(
        self, length: int, parts: list[np.ndarray], node: NodeId | None,
        mamba_slot: int | None = None, checkpoint_hints: tuple[int, ...] = (),
        host_length: int = 0,
    ) -> None:
        self.length, self._parts, self.node = length, parts, node
        self.mamba_slot, self.checkpoint_hints, self.host_length = (
            mamba_slot, checkpoint_hints, host_length)
        self._slots: np.ndarray | None = None

    @property
    def slots(self) -> np.ndarray:
        # bench match_prefix: the concatenation is paid only by callers that read it
        if self._slots is None:
            joined = np.concatenate(self._parts) if self._parts else np.zeros(0, np.int64)
            self._slots = joined[: self.length]
        return self._slots

    def __repr__(self) -> str:
        return (f"MatchResult(length={self.length}, slots={self.slots!r}, node={self.node}, "
                f"host_length={self.host_length}, mamba_slot={self.mamba_slot}, "
                f"checkpoint_hints={self.checkpoint_hints})")


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
