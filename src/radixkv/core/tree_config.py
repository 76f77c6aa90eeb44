"""Configuration of the tree core."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..errors import ConfigError
from .hashing import page_hash
from .policy import POLICIES


def normalise_ints(config: object) -> None:
    """Replace the numpy integer fields of a frozen dataclass by Python ints, before it
    validates: numbers are converted once, at the boundary (bools and anything else are
    left for the validation to judge)."""
    for item in fields(config):  # type: ignore[arg-type]
        value = getattr(config, item.name, None)
        if isinstance(value, np.integer):
            object.__setattr__(config, item.name, int(value))


@dataclass(frozen=True)
class TreeConfig:
    """How the tree keys and orders its entries.

    ``page_size``: key elements per page (the unit of matching, splitting and hashing).
    ``bigram``: key elements are overlapping token pairs (EAGLE). ``policy``: eviction policy
    name. ``events``: queue KV events. ``event_queue_limit``: the most events queued between
    two drains (see :class:`~radixkv.core.event_log.EventLog`). ``default_ttl``: tlru
    time-to-live in ticks for requests that give none. ``medium``: the medium named in
    device events. ``tiers``: 1 (device), 2 (device and host) or 3 (a third tier below the
    host; see :mod:`radixkv.core.tiers`). ``page_hash``: the chained page hash of event ids
    and storage keys, ``"sha256"`` or ``"xxh3_128"`` (needs the ``fasthash`` extra; see
    :mod:`radixkv.core.hashing`).
    """

    page_size: int = 1
    bigram: bool = False
    policy: str = "lru"
    events: bool = False
    event_queue_limit: int = 100_000
    default_ttl: int = 1024
    medium: str = "GPU"
    tiers: int = 1
    page_hash: str = "sha256"

    def __post_init__(self) -> None:
        normalise_ints(self)
        if isinstance(self.page_size, bool) or not isinstance(self.page_size, int):
            raise ConfigError(f"page_size must be an int, got {self.page_size!r}")
        if self.page_size < 1:
            raise ConfigError(f"page_size must be >= 1, got {self.page_size}")
        if not isinstance(self.policy, str) or self.policy not in POLICIES:
            raise ConfigError(
                f"unknown eviction policy {self.policy!r}; "
                f"valid policies: {', '.join(sorted(POLICIES))}"
            )
        if isinstance(self.default_ttl, bool) or not isinstance(self.default_ttl, int):
            raise ConfigError(f"default_ttl must be an int, got {self.default_ttl!r}")
        for flag in ("bigram", "events"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        if isinstance(self.event_queue_limit, bool) or not isinstance(
                self.event_queue_limit, int) or self.event_queue_limit < 1:
            raise ConfigError(
                f"event_queue_limit must be an int >= 1, got {self.event_queue_limit!r}")
        if self.tiers not in (1, 2, 3) or isinstance(self.tiers, bool):
            raise ConfigError(f"tiers must be 1, 2 or 3, got {self.tiers!r}")
        if self.default_ttl < 0:
            raise ConfigError(f"default_ttl must be >= 0, got {self.default_ttl}")
        page_hash(self.page_hash)  # raises ConfigError for an unknown or unavailable hash
