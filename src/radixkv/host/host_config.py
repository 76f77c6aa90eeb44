"""HostTier: the configuration of the host-memory tier (L2) of a cache."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import cast

from ..components.spec import check_int
from ..core.tree_config import normalise_ints
from ..errors import ConfigError


class WritePolicy(str, Enum):
    """When a node's device values are copied to the host (see :class:`HostTier`); a
    ``str`` whose value is the policy's name, so ``"write_back"`` compares equal."""

    WRITE_THROUGH = "write_through"
    WRITE_THROUGH_SELECTIVE = "write_through_selective"
    WRITE_BACK = "write_back"

    def __str__(self) -> str:  # the name users write, in reports and messages alike
        return self.value

    @property
    def backup_uses(self) -> int | None:
        """The uses at which a node is backed up; ``None`` under ``WRITE_BACK``, which
        backs up only what device eviction would drop."""
        return _BACKUP_USES[self]


_BACKUP_USES = {WritePolicy.WRITE_THROUGH: 1, WritePolicy.WRITE_THROUGH_SELECTIVE: 2,
                WritePolicy.WRITE_BACK: None}

WRITE_POLICIES = tuple(policy.value for policy in WritePolicy)
"""The policies' names, as ``HostTier(write_policy=...)`` accepts them."""


@dataclass(frozen=True)
class HostTier:
    """The host tier of a :class:`~radixkv.CacheConfig` (``CacheConfig(host=HostTier(...))``).

    ``capacity``: host slots of each per-token component (FULL, SWA, chunked local), in
    tokens, a multiple of the page size. ``states``: host state slots of each per-value
    component (MAMBA). ``capacities``: per component name, a capacity that replaces the
    default (e.g. ``{"swa": 8192}``).

    ``write_policy`` (a :class:`WritePolicy`, or its name; stored as the enum) decides when
    a node's device values are copied to the host (*backed up*). It counts a node's
    **uses**: the insert that stored the node is its first use, and every match or admit
    whose usable prefix covers part of the node adds one (that is ``1 + node.hits``;
    inserts through an existing node and recency refreshes do not count).
    ``write_through`` backs a node up at 1 use (as soon as it is cached),
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
    write_policy: WritePolicy | str = WritePolicy.WRITE_THROUGH
    capacities: Mapping[str, int] | tuple[tuple[str, int], ...] = ()
    wait_timeout_s: float = 60.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    def __post_init__(self) -> None:
        normalise_ints(self)
        check_int("host capacity", self.capacity, 0)
        check_int("host states", self.states, 0)
        if self.write_policy not in WRITE_POLICIES:
            raise ConfigError(f"unknown write policy {self.write_policy!r}; valid: "
                              f"{', '.join(WRITE_POLICIES)}")
        object.__setattr__(self, "write_policy", WritePolicy(self.write_policy))
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

    @property
    def policy(self) -> WritePolicy:
        """``write_policy`` as the enum (it is stored so, whichever spelling was given)."""
        return cast(WritePolicy, self.write_policy)

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
