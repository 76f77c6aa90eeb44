"""CacheConfig: everything a PrefixCache is built from, validated once."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..components import (
    CacheShape,
    Component,
    ComponentSpec,
    FullAttention,
    Mamba,
    PoolShape,
    SlidingWindow,
    component_type,
)
from ..components.dependencies import check_order, supported_combinations
from ..components.spec import check_int
from ..core.tree_config import TreeConfig, normalise_ints
from ..errors import ConfigError
from ..host.host_config import HostTier
from ..storage.storage_config import StorageTier

SHORTHANDS = ("full", "swa", "mamba")
"""Component names accepted as strings; their parameters come from the keyword fields."""

MAX_PAGE_SIZE = 1 << 16
"""Largest ``page_size``: far beyond any engine's, small enough that the per-page tables
built from it fit in memory."""


def _shorthand_fields(config: CacheConfig) -> dict[str, tuple[str, ...]]:
    """Per shorthand, the keyword fields that parameterize it and were given."""
    given = {
        "swa": tuple(name for name in ("sliding_window", "swa_capacity")
                     if getattr(config, name) is not None),
        "mamba": ("mamba_track_interval",) if config.mamba_track_interval is not None else (),
    }
    return given


@dataclass(frozen=True)
class CacheConfig:
    """Configuration of a :class:`~radixkv.PrefixCache`.

    ``capacity``: FULL KV slots (tokens), a multiple of ``page_size``. ``page_size``: tokens
    per page (1 to :data:`MAX_PAGE_SIZE`), the unit of matching, allocation and hashing.
    ``policy``: eviction policy name
    (see :mod:`radixkv.core.policy`), applied to every component. ``components``: the
    attention types, each a registered spec (:class:`FullAttention`, :class:`SlidingWindow`,
    :class:`ChunkedLocal`, :class:`Mamba`, or a user's, see
    :func:`radixkv.register_component`) or one of the shorthands ``"full"``, ``"swa"``,
    ``"mamba"``; the primary component first, each after what it depends on (see
    :func:`supported_combinations`). The shorthands take their parameters from
    ``sliding_window`` (SWA window W in tokens) and ``swa_capacity`` (SWA slots, default
    ``capacity``); ``mamba_track_interval`` (tokens between checkpoint hints, a multiple of
    ``page_size``) and ``mamba_states`` (state slots). ``bigram``: EAGLE bigram keys (not
    with MAMBA). ``events``: queue KV events. ``event_queue_limit``: the most events queued
    between two ``take_events()`` (a full queue is discarded and counted; the publisher then
    resyncs its routers). ``page_hash``: the chained page hash behind event ids and storage
    keys, ``"sha256"`` (default) or ``"xxh3_128"`` (faster; the ``fasthash`` extra), part of
    what identifies a key (:func:`radixkv.core.hashing.key_identity`). ``lost_hits``:
    explain every match that falls short of what the tree holds (``ComponentStats.lost``,
    ``CacheStats.capped_tokens``); off, those count as unseen. ``default_ttl``: tlru
    time-to-live (ticks) of a request that gives none.
    ``host``: the host-memory tier (:class:`~radixkv.host.HostTier`); ``None`` (the
    default) has none, and nothing costs more than an ``if``. ``storage``: the shared
    storage tier below it (:class:`~radixkv.storage.StorageTier`; needs ``host``).
    Raises :class:`ConfigError` on any invalid value or combination. ``specs`` holds the
    resolved specs, in tree order.
    """

    capacity: int
    page_size: int = 1
    policy: str = "lru"
    components: tuple[str | ComponentSpec, ...] = ("full",)
    sliding_window: int | None = None
    swa_capacity: int | None = None
    mamba_track_interval: int | None = None
    mamba_states: int = 256
    bigram: bool = False
    events: bool = False
    event_queue_limit: int = 100_000
    page_hash: str = "sha256"
    lost_hits: bool = True
    default_ttl: int = 1024
    host: HostTier | None = None
    storage: StorageTier | None = None
    specs: tuple[ComponentSpec, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        normalise_ints(self)
        tree = self.tree_config()  # validates page_size, policy and ttl
        if tree.page_size > MAX_PAGE_SIZE:
            raise ConfigError(f"page_size must be <= {MAX_PAGE_SIZE}, got {tree.page_size}")
        self._check_capacity("capacity", self.capacity, tree.page_size)
        if not isinstance(self.lost_hits, bool):
            raise ConfigError(f"lost_hits must be a bool, got {self.lost_hits!r}")
        # checked with or without Mamba: a bad value must not wait for the day Mamba is added
        check_int("mamba_states", self.mamba_states, 1)
        specs = self._resolve()
        shape = self.shape()
        for spec in specs:
            spec.validate(shape)
        object.__setattr__(self, "specs", specs)
        self._check_host(specs)
        self._check_storage()

    def _check_host(self, specs: tuple[ComponentSpec, ...]) -> None:
        host = self.host
        if host is None:
            return
        if not isinstance(host, HostTier):
            raise ConfigError(f"host must be a HostTier, got {type(host).__name__}")
        shapes = self.pool_shapes()
        known = {name for name, _ in shapes}
        for name, _ in host.overrides:
            if name not in known:
                raise ConfigError(f"host capacity for {name!r}: no such component")
        for (name, shape), spec in zip(shapes, specs):
            capacity = host.capacity_of(name, component_type(spec).per_token)
            if capacity % shape.page_size:
                raise ConfigError(f"host capacity of {name!r} ({capacity}) must be a multiple "
                                  f"of its page size {shape.page_size}")

    def _check_storage(self) -> None:
        storage = self.storage
        if storage is None:
            return
        if not isinstance(storage, StorageTier):
            raise ConfigError(f"storage must be a StorageTier, got {type(storage).__name__}")
        if self.host is None:
            raise ConfigError("a storage tier needs a host tier: L3 reads land in host slots")
        storage.check_against(self.names, self.page_size, self.page_hash, self.bigram)

    def _resolve(self) -> tuple[ComponentSpec, ...]:
        entries = self.components
        if not isinstance(entries, (tuple, list)) or not all(
                isinstance(e, ComponentSpec) or e in SHORTHANDS for e in entries):
            raise ConfigError(self._unsupported(f"{entries!r} is not a sequence of specs"))
        names = [e if isinstance(e, str) else e.name for e in entries]
        given = _shorthand_fields(self)
        probes = tuple(e if isinstance(e, ComponentSpec) else self._spec_for(e, probe=True)
                       for e in entries)
        problem = check_order(probes)
        if problem is not None:
            raise ConfigError(self._unsupported(problem))
        specs = tuple(e if isinstance(e, ComponentSpec) else self._spec_for(e) for e in entries)
        for name, fields in given.items():
            if fields and name not in [e for e in entries if isinstance(e, str)]:
                raise ConfigError(
                    f"{'/'.join(fields)} given without the {name!r} shorthand "
                    f"(components: {', '.join(names)})")
        for spec in specs:
            component_type(spec)  # raises for an unregistered spec type
        return specs

    def _unsupported(self, why: str) -> str:
        return (f"unsupported component combination {self.components!r}: {why}; "
                f"supported built-in combinations: "
                f"{', '.join('+'.join(c) for c in supported_combinations())}")

    def _spec_for(self, name: str, probe: bool = False) -> ComponentSpec:
        """The spec a shorthand stands for, from the keyword fields (a ``probe`` only to
        ask what it depends on: missing parameters are not an error yet)."""
        if name == "full":
            return FullAttention()
        if name == "swa":
            if self.sliding_window is None and not probe:
                raise ConfigError("the 'swa' component needs sliding_window")
            window = 1 if self.sliding_window is None else self.sliding_window
            return SlidingWindow(window=window, capacity=self.swa_capacity)
        if self.mamba_track_interval is None and not probe:
            raise ConfigError("the 'mamba' component needs mamba_track_interval")
        interval = 1 if self.mamba_track_interval is None else self.mamba_track_interval
        return Mamba(track_interval=interval, states=self.mamba_states)

    @staticmethod
    def _check_capacity(name: str, value: object, page_size: int) -> None:
        if check_int(name, value, 0) % page_size:
            raise ConfigError(f"{name} must be a multiple of page_size {page_size}, got {value}")

    def shape(self) -> CacheShape:
        """What specs may read of this cache's configuration."""
        return CacheShape(self.capacity, self.page_size, self.bigram)

    def tree_config(self) -> TreeConfig:
        """The part of this configuration the tree core needs."""
        return TreeConfig(
            page_size=self.page_size,
            bigram=self.bigram,
            policy=self.policy,
            events=self.events,
            event_queue_limit=self.event_queue_limit,
            default_ttl=self.default_ttl,
            page_hash=self.page_hash,
            tiers=1 if self.host is None else 2,
        )

    def make_components(self) -> list[Component]:
        """Fresh component objects, in tree order."""
        return [component_type(spec)(spec) for spec in self.specs]

    def host_shapes(self) -> list[tuple[str, int, bool]]:
        """(name, page size, per_token) of each component's pool, in tree order."""
        return [(name, shape.page_size, component_type(spec).per_token)
                for (name, shape), spec in zip(self.pool_shapes(), self.specs)]

    def pool_shapes(self) -> list[tuple[str, PoolShape]]:
        """(name, pool shape) of each component, in tree order."""
        shape = self.shape()
        return [(spec.name, spec.pool(shape)) for spec in self.specs]

    def spec(self, name: str) -> ComponentSpec | None:
        """The spec of the component called ``name``, if this cache has one."""
        return next((spec for spec in self.specs if spec.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        """Component names, in tree order."""
        return tuple(spec.name for spec in self.specs)

