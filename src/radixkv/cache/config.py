"""CacheConfig: everything a PrefixCache is built from, validated once."""

from __future__ import annotations

from dataclasses import dataclass

from ..components.base import Component
from ..components.full import FullComponent
from ..components.mamba import MambaComponent
from ..components.swa import SlidingWindowComponent
from ..core.config import TreeConfig
from ..errors import ConfigError

COMBINATIONS = (("full",), ("full", "swa"), ("full", "mamba"), ("full", "swa", "mamba"))
"""Supported component lists, FULL first (FULL+SWA also serves DSA-style models)."""


def _int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class CacheConfig:
    """Configuration of a :class:`~radixkv.PrefixCache`.

    ``capacity``: FULL KV slots (tokens), a multiple of ``page_size``. ``page_size``: tokens
    per page, the unit of matching, allocation and hashing. ``policy``: eviction policy name
    (see :mod:`radixkv.core.policy`), applied to every component. ``components``: one of
    :data:`COMBINATIONS`. ``sliding_window``: SWA window W in tokens (with ``"swa"``);
    ``swa_capacity``: SWA slots (default ``capacity``). ``mamba_track_interval``: tokens
    between checkpoint hints, a multiple of ``page_size`` (with ``"mamba"``);
    ``mamba_states``: state slots. ``bigram``: EAGLE bigram keys (not with MAMBA).
    ``events``: queue KV events. ``event_queue_limit``: the most events queued between two
    ``take_events()`` (a full queue is discarded and counted; the publisher then resyncs its
    routers). ``lost_hits``: explain every match that falls short of what the tree holds
    (``ComponentStats.lost``, ``CacheStats.capped_tokens``); off, those count as unseen.
    ``default_ttl``: tlru time-to-live (ticks) of a request
    that gives none. Raises :class:`ConfigError` on any invalid value or combination.
    """

    capacity: int
    page_size: int = 1
    policy: str = "lru"
    components: tuple[str, ...] = ("full",)
    sliding_window: int | None = None
    swa_capacity: int | None = None
    mamba_track_interval: int | None = None
    mamba_states: int = 256
    bigram: bool = False
    events: bool = False
    event_queue_limit: int = 100_000
    lost_hits: bool = True
    default_ttl: int = 1024

    def __post_init__(self) -> None:
        tree = self.tree_config()  # validates page_size, policy and ttl
        self._check_capacity("capacity", self.capacity, tree.page_size)
        if not isinstance(self.components, (tuple, list)) or (
                tuple(self.components) not in COMBINATIONS):
            raise ConfigError(
                f"unsupported component combination {self.components!r}; "
                f"supported: {', '.join(map(repr, COMBINATIONS))}"
            )
        if not isinstance(self.lost_hits, bool):
            raise ConfigError(f"lost_hits must be a bool, got {self.lost_hits!r}")
        self._check_swa(tree.page_size)
        self._check_mamba(tree.page_size)

    @staticmethod
    def _check_capacity(name: str, value: object, page_size: int) -> None:
        if _int(name, value, 0) % page_size:
            raise ConfigError(f"{name} must be a multiple of page_size {page_size}, got {value}")

    def _check_swa(self, page_size: int) -> None:
        if "swa" not in self.components:
            if self.sliding_window is not None or self.swa_capacity is not None:
                raise ConfigError("sliding_window/swa_capacity given without the 'swa' component")
            return
        if self.sliding_window is None:
            raise ConfigError("the 'swa' component needs sliding_window")
        _int("sliding_window", self.sliding_window, 1)
        if self.swa_capacity is not None:
            self._check_capacity("swa_capacity", self.swa_capacity, page_size)

    def _check_mamba(self, page_size: int) -> None:
        if "mamba" not in self.components:
            if self.mamba_track_interval is not None:
                raise ConfigError("mamba_track_interval given without the 'mamba' component")
            return
        if self.bigram:
            raise ConfigError("MAMBA cannot be combined with bigram keys")
        if self.mamba_track_interval is None:
            raise ConfigError("the 'mamba' component needs mamba_track_interval")
        interval = _int("mamba_track_interval", self.mamba_track_interval, 1)
        if interval % page_size:
            raise ConfigError(
                f"mamba_track_interval {interval} must be a multiple of page_size {page_size}"
            )
        _int("mamba_states", self.mamba_states, 1)

    def tree_config(self) -> TreeConfig:
        """The part of this configuration the tree core needs."""
        return TreeConfig(
            page_size=self.page_size,
            bigram=self.bigram,
            policy=self.policy,
            events=self.events,
            event_queue_limit=self.event_queue_limit,
            default_ttl=self.default_ttl,
        )

    def make_components(self) -> list[Component]:
        """Fresh component objects, in tree order."""
        made: list[Component] = [FullComponent()]
        if "swa" in self.components:
            assert self.sliding_window is not None
            made.append(SlidingWindowComponent(self.sliding_window))
        if "mamba" in self.components:
            made.append(MambaComponent())
        return made

    def pool_capacities(self) -> list[tuple[str, int, int]]:
        """(name, capacity, page size) of each component's pool, in tree order."""
        pools = [("full", self.capacity, self.page_size)]
        if "swa" in self.components:
            swa = self.capacity if self.swa_capacity is None else self.swa_capacity
            pools.append(("swa", swa, self.page_size))
        if "mamba" in self.components:
            pools.append(("mamba", self.mamba_states, 1))
        return pools
