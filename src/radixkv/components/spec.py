"""Component specs: frozen descriptions of one attention type and its parameters.

A spec is what a user writes in ``CacheConfig(components=...)``; the registry
(:mod:`radixkv.components.registry`) maps each spec type to the :class:`Component` class that
gives its values meaning in the tree. A spec validates its own parameters, names the pool its
slots live in and declares what it depends on; the cache derives the eviction cascade and the
lock invariant from those declarations, never from list positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..core.tree_config import normalise_ints
from ..errors import ConfigError


def check_int(name: str, value: object, minimum: int) -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``; else :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class PoolShape:
    """The slot pool of one component: ``capacity`` slots allocated in pages of
    ``page_size`` (the cache's page size for per-token slots, 1 for per-request states)."""

    capacity: int
    page_size: int


@dataclass(frozen=True)
class CacheShape:
    """What a spec may read of the cache it is part of: the FULL-slot ``capacity`` (the
    default size of other per-token pools), ``page_size`` and whether keys are bigrams."""

    capacity: int
    page_size: int
    bigram: bool


@dataclass(frozen=True)
class ComponentSpec:
    """One attention type in a cache. Subclasses are frozen dataclasses whose fields are the
    type's parameters; registering one with :func:`radixkv.register_component` makes it
    usable in ``CacheConfig(components=...)``.

    ``name`` is unique among registered specs and keys everything reported per component
    (stats, eviction budgets, errors). Exactly one component of a cache is ``primary``: its
    slots are the ones a match returns and every other component depends on it, directly or
    through others. ``windowed`` components keep only a suffix of a prefix's tokens (see
    :meth:`Component.window_start`), which is what MAMBA-like components depend on.
    """

    name: ClassVar[str]
    primary: ClassVar[bool] = False
    windowed: ClassVar[bool] = False

    def __post_init__(self) -> None:
        normalise_ints(self)

    def validate(self, shape: CacheShape) -> None:
        """Raise :class:`ConfigError` unless this spec's parameters fit ``shape``; pure."""

    def depends_on(self, present: Sequence[ComponentSpec]) -> tuple[str, ...]:
        """Names of the components (among ``present``, this cache's specs) whose values this
        component's values are useless without. Evicting one of them evicts this one's value
        on the same node (the cascade), and on every node this component's lock count stays
        at most theirs. Default: the primary component."""
        return tuple(spec.name for spec in present if spec.primary and spec is not self)

    def pool(self, shape: CacheShape) -> PoolShape:
        """This component's slot pool; default: one slot per token, as many as FULL."""
        return PoolShape(shape.capacity, shape.page_size)


@dataclass(frozen=True)
class FullAttention(ComponentSpec):
    """Full causal attention: one KV slot per token, every token of a prefix needed. The
    primary component of every built-in combination; its pool is ``CacheConfig.capacity``."""

    name: ClassVar[str] = "full"
    primary: ClassVar[bool] = True


@dataclass(frozen=True)
class SlidingWindow(ComponentSpec):
    """Sliding-window attention over the last ``window`` tokens; ``capacity`` SWA slots
    (default: as many as FULL)."""

    name: ClassVar[str] = "swa"
    windowed: ClassVar[bool] = True
    window: int
    capacity: int | None = None

    def validate(self, shape: CacheShape) -> None:
        check_int("sliding_window", self.window, 1)
        _check_capacity("swa_capacity", self.capacity, shape.page_size)

    def pool(self, shape: CacheShape) -> PoolShape:
        capacity = shape.capacity if self.capacity is None else self.capacity
        return PoolShape(capacity, shape.page_size)


@dataclass(frozen=True)
class ChunkedLocal(ComponentSpec):
    """Chunked local attention (Llama 4's local layers): a token attends only to the earlier
    tokens of its own chunk of ``chunk`` tokens; ``capacity`` slots (default: as many as
    FULL). ``chunk`` is a multiple of the page size."""

    name: ClassVar[str] = "chunked"
    windowed: ClassVar[bool] = True
    chunk: int
    capacity: int | None = None

    def validate(self, shape: CacheShape) -> None:
        chunk = check_int("chunk", self.chunk, 1)
        if chunk % shape.page_size:
            raise ConfigError(f"chunk {chunk} must be a multiple of page_size {shape.page_size}")
        _check_capacity("chunked capacity", self.capacity, shape.page_size)

    def pool(self, shape: CacheShape) -> PoolShape:
        capacity = shape.capacity if self.capacity is None else self.capacity
        return PoolShape(capacity, shape.page_size)


@dataclass(frozen=True)
class Mamba(ComponentSpec):
    """Mamba/SSM recurrent state: one state slot per checkpoint, ``states`` of them; hints
    every ``track_interval`` tokens (a multiple of the page size). Depends on the windowed
    components when there are any (a state at a node end is useless without the window
    before it), else on the primary. Not with bigram keys."""

    name: ClassVar[str] = "mamba"
    track_interval: int
    states: int = 256

    def validate(self, shape: CacheShape) -> None:
        if shape.bigram:
            raise ConfigError("MAMBA cannot be combined with bigram keys")
        interval = check_int("mamba_track_interval", self.track_interval, 1)
        if interval % shape.page_size:
            raise ConfigError(
                f"mamba_track_interval {interval} must be a multiple of page_size "
                f"{shape.page_size}")
        check_int("mamba_states", self.states, 1)

    def depends_on(self, present: Sequence[ComponentSpec]) -> tuple[str, ...]:
        windows = tuple(spec.name for spec in present if spec.windowed)
        return windows or super().depends_on(present)

    def pool(self, shape: CacheShape) -> PoolShape:
        return PoolShape(self.states, 1)


def _check_capacity(name: str, value: object, page_size: int) -> None:
    if value is not None and check_int(name, value, 0) % page_size:
        raise ConfigError(f"{name} must be a multiple of page_size {page_size}, got {value}")
