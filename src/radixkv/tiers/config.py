"""HostTier: the configuration of the host-memory tier (L2) of a cache."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from ..components.spec import check_int
from ..core.config import normalise_ints
from ..errors import ConfigError

WRITE_POLICIES = {"write_through": 1, "write_through_selective": 2, "write_back": None}
"""Write policy name -> the hit count (see :class:`HostTier`) at which a node is backed up;
``None``: only when device eviction would drop it."""


@dataclass(frozen=True)
class HostTier:
    """The host tier of a :class:`~radixkv.CacheConfig` (``CacheConfig(host=HostTier(...))``).

    ``capacity``: host slots of each per-token component (FULL, SWA, chunked local), in
    tokens, a multiple of the page size. ``states``: host state slots of each per-value
    component (MAMBA). ``capacities``: per component name, a capacity that replaces the
    default (e.g. ``{"swa": 8192}``).

    ``write_policy`` decides when a node's device values are copied to the host (*backed
    up*). It counts a node's **uses**: the insert that stored the node is its first use,
    and every match or admit whose usable prefix covers part of the node adds one (that is
    ``1 + node.hits``; inserts through an existing node and recency refreshes do not
    count). ``write_through`` backs a node up at 1 use (as soon as it is cached),
    ``write_through_selective`` at 2 (its first reuse), and ``write_back`` only when device
    eviction is about to drop a value the host lacks (eviction pauses on the node until the
    copy is acknowledged, then demotes it). Backing a node up also backs up every ancestor
    whose primary value the host lacks. A backup that finds no host room (after host
    eviction) is skipped: the node stays device-only.

    ``wait_timeout_s``: the longest the cache waits for the copy engine to report a copy it
    waits for (``wait``, ``reset``, an eviction that waits for a backup) before it raises
    :class:`~radixkv.errors.CopyEngineError`; finite and > 0, measured on ``clock``.

    ``clock``: what the wait timeout is measured on, a callable returning seconds
    (``time.monotonic``, the default). A test may give a fake clock that advances a fixed
    step per call, so that the timeout is a count of polls, never a matter of machine
    speed. Raises :class:`ConfigError` on an invalid value.
    """

    capacity: int
    states: int = 0
    write_policy: str = "write_through"
    capacities: Mapping[str, int] | tuple[tuple[str, int], ...] = ()
    wait_timeout_s: float = 60.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)
    threshold: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        normalise_ints(self)
        check_int("host capacity", self.capacity, 0)
        check_int("host states", self.states, 0)
        if self.write_policy not in WRITE_POLICIES:
            raise ConfigError(f"unknown write policy {self.write_policy!r}; valid: "
                              f"{', '.join(WRITE_POLICIES)}")
        entries = self.capacities
        pairs = entries.items() if isinstance(entries, Mapping) else entries
        try:
            normalized = tuple(sorted((str(name), int(value)) for name, value in pairs))
        except (TypeError, ValueError) as error:
            raise ConfigError(f"host capacities must map names to ints: {error}") from None
        for name, value in normalized:
            check_int(f"host capacity of {name!r}", value, 0)
        object.__setattr__(self, "capacities", normalized)
        timeout = self.wait_timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not 0 < timeout < math.inf:
            raise ConfigError(f"wait_timeout_s must be a finite number > 0, got {timeout!r}")
        if not callable(self.clock):
            raise ConfigError(f"clock must be a callable returning seconds, got {self.clock!r}")
        object.__setattr__(self, "threshold", WRITE_POLICIES[self.write_policy])

    @property
    def overrides(self) -> tuple[tuple[str, int], ...]:
        """The per-component capacities, as sorted (name, slots) pairs."""
        return cast(tuple[tuple[str, int], ...], self.capacities)

    def capacity_of(self, name: str, per_token: bool) -> int:
        """Host slots of the component called ``name``."""
        for entry, value in self.overrides:
            if entry == name:
                return value
        return self.capacity if per_token else self.states
