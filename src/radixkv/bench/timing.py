"""The timing procedure of the benchmark spec (§5): warm-up, then each item timed alone."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Timing:
    """Result of timing one operation: ``T`` timed items, wall seconds (clock reads
    included), per-item latencies in microseconds."""

    count: int
    wall: float
    latencies_us: tuple[float, ...]
    tokens_per_op: int

    @property
    def ops_per_s(self) -> float:
        return self.count / self.wall if self.wall else 0.0

    @property
    def p50_us(self) -> float:
        ordered = sorted(self.latencies_us)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

    @property
    def p99_us(self) -> float:
        ordered = sorted(self.latencies_us)
        return ordered[min(int(0.99 * len(ordered)), len(ordered) - 1)]

    @property
    def mean_us(self) -> float:
        return sum(self.latencies_us) / len(self.latencies_us)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_op * self.ops_per_s


def time_items(
    items: Sequence[T],
    op: Callable[[T], object],
    warmup: int,
    timed: int,
    tokens_per_op: int,
    check: Callable[[T], None] | None = None,
) -> Timing:
    """Run ``items[:warmup]`` untimed (``check`` after each), then time each of the next
    ``timed`` items alone with the garbage collector off; ``check`` runs once more on the
    last timed item, after timing."""
    for item in items[:warmup]:
        op(item)
        if check is not None:
            check(item)
    gc.collect()
    gc.disable()
    latencies: list[float] = []
    now = time.perf_counter
    try:
        start = now()
        for item in items[warmup : warmup + timed]:
            begin = now()
            op(item)
            latencies.append((now() - begin) * 1e6)
        wall = now() - start
    finally:
        gc.enable()
    if check is not None and timed:
        check(items[warmup + timed - 1])
    return Timing(timed, wall, tuple(latencies), tokens_per_op)
