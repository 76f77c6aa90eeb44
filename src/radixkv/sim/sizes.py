"""The simulator's size limits, checked before anything is built: a capacity, a trace block or
a workload far past what a machine holds is refused with one line (``radixkv sim`` exits 2)
instead of ending in numpy's ``MemoryError`` and a traceback. Imports nothing heavy (the
command line's ``--help`` stays fast); the workload estimate imports the generators."""

from __future__ import annotations

import math
from typing import Any

UNITS = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}

MAX_CAPACITY = 1_000_000_000
"""Most tokens a simulated cache (or host tier) may hold: its slot tables alone take about
8 bytes a token (8 GB here)."""
MAX_BLOCK = 1 << 20
"""Most tokens a trace's hash id may stand for (Mooncake's traces use 512)."""
MAX_WORKLOAD_TOKENS = 1_000_000_000
"""Most tokens (prompts and answers, 4 bytes each) a generated workload may hold."""


def parse_capacity(text: str) -> int | None:
    """``1M`` → 1,000,000; ``500K``; a plain integer; ``inf`` → ``None`` (unbounded). Raises
    ``ValueError`` for anything else and past :data:`MAX_CAPACITY`."""
    text = text.strip()
    if text.lower() in ("inf", "unbounded"):
        return None
    unit = UNITS.get(text[-1:].upper())
    try:
        value = float(text[:-1]) * unit if unit else float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or value != int(value):
        raise ValueError(f"capacity must be a positive whole number of tokens (e.g. 300K, "
                         f"1M, 4096, inf), got {text!r}")
    if value > MAX_CAPACITY:
        raise ValueError(f"capacity {text!r} is past the simulator's limit of 1G tokens")
    return int(value)


def workload_tokens(name: str, params: dict[str, Any]) -> int:
    """An upper bound of the tokens workload ``name`` generates with ``params`` (its config
    validates them: ``ValueError`` as ``make_workload`` raises it)."""
    from dataclasses import fields, replace

    from .workloads import WORKLOADS

    config_type, _generate = WORKLOADS[name]
    known = {item.name for item in fields(config_type)}
    config: Any = replace(config_type(), **{k: v for k, v in params.items() if k in known})
    grow = 1.0 + float(config.jitter)  # every length may be drawn up to this much longer
    return math.ceil(grow * int(_TOKENS[name](config)))


def _chain(count: int, first: int, step: int, output: int) -> int:
    """Prompts and answers of ``count`` requests, each prompt ``step`` longer than the last."""
    return count * (first + output) + step * count * (count - 1) // 2


_TOKENS: dict[str, Any] = {
    "system": lambda c: c.groups * c.system_len
    + c.groups * c.prompts * (c.system_len + c.question_len + c.output_len),
    "chat": lambda c: c.sessions * _chain(c.turns, c.system_len + c.user_len,
                                          c.user_len + c.output_len, c.output_len),
    "fewshot": lambda c: c.families * (c.shots * c.shot_len + c.questions * (
        c.shots * c.shot_len + c.question_len + c.output_len)),
    "agent": lambda c: c.agents * _chain(c.steps, c.context_len, c.output_len + c.tool_len,
                                         c.output_len),
}
