"""Checks of the stores' configuration fields, run when a config is made: a value a store
would only trip over at its first call (an endless stream of faults, a cap that is a bool)
is refused up front with :class:`ConfigTypeError` (wrong type) or :class:`ConfigError`
(out of range), naming the field."""

from __future__ import annotations

import math

from ..errors import ConfigError, ConfigTypeError


def check_int(name: str, value: object, low: int, high: int | None = None) -> None:
    """``value`` is an int (not a bool) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigTypeError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise ConfigError(f"{name} must be {bound}, got {value}")


def check_optional_int(name: str, value: object, low: int) -> None:
    """``value`` is ``None`` or an int of at least ``low``."""
    if value is not None:
        check_int(name, value, low)


def check_seconds(name: str, value: object, positive: bool) -> None:
    """``value`` is a finite number of seconds, > 0 if ``positive`` else >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigTypeError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ConfigError(f"{name} must be a finite number {'>' if positive else '>='} 0, "
                          f"got {value!r}")


def check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigTypeError(f"{name} must be a bool, got {value!r}")


def check_text(name: str, value: object, optional: bool = False) -> None:
    """``value`` is a non-empty str (or ``None`` when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise ConfigTypeError(f"{name} must be a str{' or None' if optional else ''}, "
                              f"got {value!r}")
    if not value:
        raise ConfigError(f"{name} must not be empty")


def check_clock(name: str, value: object) -> None:
    """``value`` is a callable (one returning seconds, as ``time.monotonic``)."""
    if not callable(value):
        raise ConfigTypeError(f"{name} must be a callable returning seconds, got {value!r}")
