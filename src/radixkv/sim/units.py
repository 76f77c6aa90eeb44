"""Human units for what the simulator prints, draws and writes: token counts in one
notation (``300K``, ``1.25M``, ``∞`` for unbounded), times in ms below a second and in s
above it, thousands separators. Imports nothing (the labels are made before any run)."""

from __future__ import annotations

INFINITY = "∞"

_UNITS = (("G", 1_000_000_000), ("M", 1_000_000), ("K", 1_000))


def tokens(count: int | None) -> str:
    """A token count: ``None`` (unbounded) as ``∞``, under 1,000 as it is, else in the
    largest unit it reaches (K, M, G) with the decimals it needs to stay exact: ``300K``,
    ``1.25M`` (never ``1250K``), ``4.096K``."""
    if count is None:
        return INFINITY
    for unit, size in _UNITS:
        if count >= size:
            whole, rest = divmod(count, size)
            digits = len(str(size)) - 1
            fraction = f".{rest:0{digits}d}".rstrip("0") if rest else ""
            return f"{whole:,}{fraction}{unit}"
    return str(count)


def seconds(value: float | None) -> str:
    """A duration: ``-`` for none, ``850.3 ms`` under a second, ``1.23 s`` or
    ``1,234.57 s`` from a second on."""
    if value is None:
        return "-"
    if abs(value) < 1.0:
        return f"{1000 * value:,.1f} ms"
    return f"{value:,.2f} s"


def seconds_tick(value: float) -> str:
    """A duration on an axis: as short as the tick allows (``5 ms``, ``250 ms``, ``1.5 s``,
    ``1,200 s``)."""
    if value == 0:
        return "0"
    if value < 1.0:
        return f"{_short(1000 * value)} ms"
    return f"{_short(value)} s"


def _short(number: float) -> str:
    return f"{number:,.0f}" if number >= 100 else f"{number:.3g}"


def percent(value: float | None) -> str:
    """A share as ``12.3%``; ``-`` for none."""
    return "-" if value is None else f"{100 * value:.1f}%"
