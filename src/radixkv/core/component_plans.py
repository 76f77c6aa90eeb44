"""What a tree derives once from its components: how far each one's lock reaches, and the
order of their dependencies (what evicting one evicts along)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:  # components import the node module of this package
    from ..components.base import Component

PATH, NODE, WINDOW, BOUNDARY = "path", "node", "window", "boundary"
"""How a component's lock reaches up from its node: the whole path with per-token sizes,
the node alone, or up to the boundary its ``lock_boundary`` computes."""


def lock_mode(component: Component) -> str:
    """The lock mode of ``component``, from its class flags."""
    if component.pins_whole_path and component.per_token:
        return PATH
    if component.pins_window and component.per_token:
        return WINDOW
    return NODE if component.pins_end_node else BOUNDARY


def dependencies(components: Sequence[Component]) -> list[tuple[int, ...]]:
    """Per component, the indices of what its spec depends on; :class:`ConfigError` unless
    each is present and earlier in the list."""
    specs = [component.spec for component in components]
    index = {spec.name: position for position, spec in enumerate(specs)}
    found = []
    for position, spec in enumerate(specs):
        names = spec.depends_on(specs)
        if any(index.get(name, position) >= position for name in names):
            raise ConfigError(f"{spec.name!r} depends on {names}: each must come before it")
        found.append(tuple(index[name] for name in names))
    return found


def dependents(depends: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Per component, every component that depends on it directly or transitively, in
    component order (dependencies always come first)."""
    result: list[tuple[int, ...]] = []
    for component in range(len(depends)):
        reached = {component}
        for later in range(component + 1, len(depends)):
            if reached.intersection(depends[later]):
                reached.add(later)
        result.append(tuple(sorted(reached - {component})))
    return result
