"""Rounds of the benchmark: every tree under test on every workload and cache shape,
alternating.

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

RunShape = Callable[[str, str, int, tuple[str, ...]], Iterator[Record]]
"""Run (workload, components, page size, operations) on one tree; one record per op."""

# SGLang keeps mamba states per page only with its extra (ping-pong) buffer, which this
# benchmark's direct inserts do not drive.
PEER_SKIPS = {("full+mamba", 16): "SGLang needs its mamba extra buffer for page_size > 1"}


@dataclass(frozen=True)
class Plan:
    """What one ``radixkv bench ops`` run measures: each workload on each cache shape
    ``(workload, components, page size)``, with that workload's operations."""

    shapes: tuple[tuple[str, str, int], ...]
    trees: tuple[str, ...]
    rounds: int
    ops: dict[str, tuple[str, ...]]

    def trees_for(self, _workload: str, components: str, page_size: int) -> tuple[str, ...]:
        if (components, page_size) in PEER_SKIPS:
            return tuple(t for t in self.trees if not t.startswith("sglang-"))
        return self.trees


def in_process(works: dict[str, Workload]) -> RunShape:
    """radixkv in this process, on the workloads ``works`` (by name)."""
    def run(workload: str, components: str, page_size: int, ops: tuple[str, ...]
            ) -> Iterator[Record]:
        work = works[workload]
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
    """All rounds; one record per (round, workload, shape, tree, operation)."""
    records: list[Record] = []
    for round_index in range(plan.rounds):
        for workload, components, page_size in plan.shapes:
            trees = plan.trees_for(workload, components, page_size)
            shift = round_index % len(trees)
            for tree in trees[shift:] + trees[:shift]:
                where = (f"round {round_index + 1}/{plan.rounds} {workload} {components} "
                         f"p{page_size} {tree}")
                ops = plan.ops[workload]
                for record in runners[tree](workload, components, page_size, ops):
                    record.update(round=round_index, tree=tree, workload=workload,
                                  components=components, page_size=page_size)
                    records.append(record)
                    progress.op(where, record)
                progress.tree_done()
    return records


def check_same_inputs(infos: dict[str, dict[str, Any]], hellos: list[dict[str, Any]]
                      ) -> None:
    """Every worker regenerated the same sequences and queries (SHA-256 and counts) of every
    workload (``infos``: by name)."""
    for hello in hellos:
        for name, reference in infos.items():
            theirs = hello["workloads"].get(name, {})
            if theirs != reference:
                diff = {k: (reference.get(k), theirs.get(k)) for k in reference
                        if reference.get(k) != theirs.get(k)}
                raise RuntimeError(f"{hello['tree']} generated different {name} inputs: {diff}")
