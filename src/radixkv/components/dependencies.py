"""Dependencies between components, derived from what their specs declare.

A component depends on the components its values are useless without (SWA on FULL; MAMBA on
the windowed components, else on FULL). From those declarations follow the component order a
cache accepts (each after what it depends on), the eviction cascade (evicting a value evicts
the values that depend on it, on the same node) and the lock invariant (on every node a
component's lock count is at most that of each component it depends on).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from .spec import ChunkedLocal, ComponentSpec, FullAttention, Mamba, SlidingWindow

BUILT_IN: tuple[type[ComponentSpec], ...] = (FullAttention, SlidingWindow, ChunkedLocal, Mamba)
"""The specs radixkv ships, in the order combinations list them."""


def check_order(specs: Sequence[ComponentSpec]) -> str | None:
    """Why ``specs`` cannot form a cache, or ``None`` when they can: the names are unique,
    exactly one is primary and comes first, each declared dependency is present and listed
    earlier, and every component reaches the primary through its dependencies. Pure."""
    names = [spec.name for spec in specs]
    if not specs:
        return "a cache needs at least one component"
    if len(set(names)) != len(names):
        return "a component is listed twice"
    if [spec.primary for spec in specs].count(True) != 1 or not specs[0].primary:
        return "exactly one primary component (e.g. 'full'), listed first, is needed"
    for position, spec in enumerate(specs[1:], start=1):
        needed = spec.depends_on(specs)
        missing = [name for name in needed if name not in names[:position]]
        if not needed or missing:
            return (f"{spec.name!r} depends on {', '.join(map(repr, needed)) or 'nothing'}, "
                    "which must be listed before it")
    return None


def dependencies(specs: Sequence[ComponentSpec]) -> list[tuple[int, ...]]:
    """Per component, the indices of the components it depends on (directly)."""
    index = {spec.name: position for position, spec in enumerate(specs)}
    return [tuple(index[name] for name in spec.depends_on(specs)) for spec in specs]


def supported_combinations(
    spec_types: Sequence[type[ComponentSpec]] | None = None,
) -> list[tuple[str, ...]]:
    """Every combination of ``spec_types`` (default: radixkv's built-in specs; pass
    :func:`~radixkv.components.registered_specs` for every registered one) that can form a
    cache, as names in tree order: the primary first, then any subset of the others, each
    after what it depends on. Specs whose parameters have no defaults are built with
    placeholder values only to ask what they depend on. Pure."""
    types = list(BUILT_IN if spec_types is None else spec_types)
    primaries = [t for t in types if t.primary]
    others = [t for t in types if not t.primary]
    found: list[tuple[str, ...]] = []
    for primary in primaries:
        for size in range(len(others) + 1):
            for subset in itertools.combinations(others, size):
                names = _ordered((primary, *subset))
                if names is not None:
                    found.append(names)
    return found


def _ordered(types: Sequence[type[ComponentSpec]]) -> tuple[str, ...] | None:
    """The names of ``types`` in an order that :func:`check_order` accepts, if any (the
    registration order, with each moved after what it depends on)."""
    specs = [_placeholder(t) for t in types]
    if any(spec is None for spec in specs):
        return None
    for order in itertools.permutations(specs):
        chosen = [spec for spec in order if spec is not None]
        if check_order(chosen) is None:
            return tuple(spec.name for spec in chosen)
    return None


def _placeholder(spec_type: type[ComponentSpec]) -> ComponentSpec | None:
    """An instance of ``spec_type`` built from its defaults, or with 1 for each int field
    without one; ``None`` if that is not possible."""

    values = {f.name: 1 for f in dataclasses.fields(spec_type)
              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    try:
        return spec_type(**values)
    except (TypeError, ValueError):
        return None
