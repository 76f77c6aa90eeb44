"""Checks of the plain arguments public entry points take (counts, lengths, flags).

Each number is validated and converted to a Python ``int`` exactly once, here: a numpy
scalar that passed a range check would otherwise wrap later, inside arithmetic on it (4
bytes a token, whole pages, tick + ttl). Nothing past the boundary sees anything but
``int`` and ``bool``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core.keys import Namespace, encode_tokens, validate_namespace
from ..errors import InvalidArgumentError


def as_int(name: str, value: object, minimum: int | None = None,
           maximum: int | None = None) -> int:
    """``value`` as a Python int within ``[minimum, maximum]`` (``None``: unbounded).

    Takes Python ints and numpy integer scalars (of any width); refuses bools, floats and
    everything else. Raises :class:`InvalidArgumentError`. O(1); a Python int takes one
    ``type`` test before the range check.
    """
    number = value if type(value) is int else _integer(name, value)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise InvalidArgumentError(f"{name}={number} is outside [{minimum}, {maximum}]")
    return number


def as_optional_int(name: str, value: object, minimum: int | None = None,
                    maximum: int | None = None) -> int | None:
    """:func:`as_int`, with ``None`` (absent) passed through."""
    return None if value is None else as_int(name, value, minimum, maximum)


def _integer(name: str, value: object) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{name} must be an int, got {value!r}")
    return operator.index(value)  # an exact int, also for int subclasses


def as_bool(name: str, value: object) -> bool:
    """``value`` as a Python bool: ``True``/``False`` or a numpy bool; refuses ints (``1``,
    ``2``, ``-1``), floats and everything else with :class:`InvalidArgumentError`."""
    if value is True or value is False:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise InvalidArgumentError(f"{name} must be a bool, got {value!r}")


def request_args(tokens: Any, namespace: Any, priority: int, ttl: int | None
                 ) -> tuple[bytes, Namespace, int, int | None]:
    """Validate what a request brings: packed tokens, its namespace, its priority and ttl as
    Python ints; pure. A function, not a method: one instruction less per admit and insert
    than a bound method's lookup (bench opcodes)."""
    packed = encode_tokens(tokens)
    space = validate_namespace(namespace)
    if type(priority) is not int:  # bench insert/admit: a plain int takes one test
        priority = as_int("priority", priority)
    if ttl is not None:
        ttl = as_int("ttl", ttl, 0)
    return packed, space, priority, ttl
