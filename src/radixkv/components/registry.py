"""The component registry: which :class:`Component` class gives each spec type its meaning.

Built-in specs are registered when :mod:`radixkv.components` is imported. A user adds an
attention type without editing radixkv: a frozen :class:`ComponentSpec` subclass, a
:class:`Component` subclass whose constructor takes the spec, and one
:func:`register_component` call.
"""

from __future__ import annotations

import dataclasses

from ..errors import ConfigError, ConfigTypeError
from .base import Component
from .spec import ComponentSpec

_COMPONENTS: dict[type[ComponentSpec], type[Component]] = {}


def register_component(spec_type: type[ComponentSpec], component_type: type[Component]) -> None:
    """Make ``spec_type`` usable in ``CacheConfig(components=...)``: each cache builds its
    component as ``component_type(spec)``. Mutates the process-wide registry; registering
    the same pair again is a no-op. Raises :class:`ConfigTypeError` for a spec type that is
    not a frozen :class:`ComponentSpec` dataclass with a ``name``, or a component type that
    is not a :class:`Component`; :class:`ConfigError` when another spec type has that name
    or the spec type is registered with another component type."""
    _check_types(spec_type, component_type)
    current = _COMPONENTS.get(spec_type)
    if current is not None and current is not component_type:
        raise ConfigError(f"{spec_type.__name__} is registered with {current.__name__} already")
    for known in _COMPONENTS:
        if known is not spec_type and known.name == spec_type.name:
            raise ConfigError(f"component name {spec_type.name!r} is taken by {known.__name__}")
    _COMPONENTS[spec_type] = component_type


def _check_types(spec_type: object, component_type: object) -> None:
    if not (isinstance(spec_type, type) and issubclass(spec_type, ComponentSpec)
            and dataclasses.is_dataclass(spec_type)
            and spec_type.__dataclass_params__.frozen):  # type: ignore[attr-defined]
        raise ConfigTypeError(f"{spec_type!r} is not a frozen ComponentSpec dataclass")
    name = getattr(spec_type, "name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigTypeError(f"{spec_type.__name__}.name must be an identifier, got {name!r}")
    if not (isinstance(component_type, type) and issubclass(component_type, Component)):
        raise ConfigTypeError(f"{component_type!r} is not a Component subclass")


def component_type(spec: ComponentSpec) -> type[Component]:
    """The component class registered for ``spec``'s type; :class:`ConfigError` if none."""
    found = _COMPONENTS.get(type(spec))
    if found is None:
        raise ConfigError(f"{type(spec).__name__} is not a registered component spec; "
                          "call radixkv.register_component first")
    return found


def registered_specs() -> list[type[ComponentSpec]]:
    """Every registered spec type, in registration order."""
    return list(_COMPONENTS)
