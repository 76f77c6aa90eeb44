"""Rounds of the benchmark: every tree under test on every cache shape, alternating.

radixkv alone runs in this process. Side by side (``--against sglang``) every tree runs in
its own long-lived worker process on the same machine and inputs, and each round runs each
tree once per shape, the trees' order rotating from round to round so that none always goes
first.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .ops import Workload
from .runner import Record, bench_shape, radixkv_factory, run_ops

RunShape = Callable[[str, int, tuple[str, ...]], Iterator[Record]]

# SGLang keeps mamba states per page only with its extra (ping-pong) buffer, which this
# benchmark's direct inserts do not drive.
PEER_SKIPS = {("full+mamba", 16): "SGLang needs its mamba extra buffer for page_size > 1"}


@dataclass(frozen=True)
class Plan:
    """What one ``radixkv bench ops`` run measures."""

    shapes: tuple[tuple[str, int], ...]
    trees: tuple[str, ...]
    rounds: int
    ops: tuple[str, ...]

    def trees_for(self, components: str, page_size: int) -> tuple[str, ...]:
        if (components, page_size) in PEER_SKIPS:
            return tuple(t for t in self.trees if not t.startswith("sglang-"))
        return self.trees


def in_process(work: Workload) -> RunShape:
    """radixkv in this process."""
    def run(components: str, page_size: int, ops: tuple[str, ...]) -> Iterator[Record]:
        return run_ops(radixkv_factory(bench_shape(components, page_size, work)), work, ops)

    return run


class Progress:
    """One line per finished operation on stderr (a run takes minutes)."""

    def __init__(self, plan: Plan, enabled: bool = True) -> None:
        self.enabled = enabled
        self.total = sum(len(plan.trees_for(*shape)) for shape in plan.shapes) * plan.rounds
        self.done = 0
        self.start = time.monotonic()

    def op(self, where: str, record: Record) -> None:
        if self.enabled:
            print(f"  {where:<40} {record['op']:<13} {record['ops_per_s']:>11,.0f} ops/s",
                  file=sys.stderr, flush=True)

    def tree_done(self) -> None:
        self.done += 1
        if self.enabled:
            elapsed = time.monotonic() - self.start
            left = elapsed / self.done * (self.total - self.done)
            print(f"[{self.done}/{self.total} runs, {elapsed:.0f} s, about {left:.0f} s left]",
                  file=sys.stderr, flush=True)


def run_plan(plan: Plan, runners: dict[str, RunShape], progress: Progress) -> list[Record]:
    """All rounds; one record per (round, shape, tree, operation)."""
    records: list[Record] = []
    for round_index in range(plan.rounds):
        for components, page_size in plan.shapes:
            trees = plan.trees_for(components, page_size)
            shift = round_index % len(trees)
            for tree in trees[shift:] + trees[:shift]:
                where = f"round {round_index + 1}/{plan.rounds} {components} p{page_size} {tree}"
                for record in runners[tree](components, page_size, plan.ops):
                    record.update(round=round_index, tree=tree, components=components,
                                  page_size=page_size)
                    records.append(record)
                    progress.op(where, record)
                progress.tree_done()
    return records


def check_same_inputs(reference: dict[str, Any], hellos: list[dict[str, Any]]) -> None:
    """Every worker regenerated the same sequences and queries (SHA-256 and counts)."""
    for hello in hellos:
        theirs = hello["workload"]
        if theirs != reference:
            diff = {k: (reference.get(k), theirs.get(k)) for k in reference
                    if reference.get(k) != theirs.get(k)}
            raise RuntimeError(f"{hello['tree']} generated different inputs: {diff}")
