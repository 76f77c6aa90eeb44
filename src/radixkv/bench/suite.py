"""Rounds of the benchmark: every tree under test on every workload and cache shape,
alternating.

radixkv alone runs in this process. Side by side (``--against sglang``) every tree runs in
its own long-lived worker process on the same machine and inputs. Each round runs each
operation of each shape on every tree in turn (each on its own fresh cache) before the next
operation, the trees' order rotating from operation to operation and from round to round so
that none always goes first: the measurements a ratio divides are seconds apart, not the
whole of the other trees' operations apart, so they share more of the machine's noise.
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

    def shape_done(self, trees: int) -> None:
        """``trees`` trees have run every operation of one shape."""
        self.done += trees
        if self.enabled:
            elapsed = time.monotonic() - self.start
            left = elapsed / self.done * (self.total - self.done)
            print(f"[{self.done}/{self.total} runs, {elapsed:.0f} s, about {left:.0f} s left]",
                  file=sys.stderr, flush=True)


def tree_order(trees: tuple[str, ...], round_index: int, op_index: int) -> tuple[str, ...]:
    """The order the trees run one operation in: rotated by one more place for each
    operation and each round."""
    shift = (round_index + op_index) % len(trees)
    return trees[shift:] + trees[:shift]


def run_plan(plan: Plan, runners: dict[str, RunShape], progress: Progress) -> list[Record]:
    """All rounds; one record per (round, workload, shape, tree, operation)."""
    records: list[Record] = []
    for round_index in range(plan.rounds):
        for workload, components, page_size in plan.shapes:
            trees = plan.trees_for(workload, components, page_size)
            for op_index, op in enumerate(plan.ops[workload]):
                for tree in tree_order(trees, round_index, op_index):
                    where = (f"round {round_index + 1}/{plan.rounds} {workload} {components} "
                             f"p{page_size} {tree}")
                    for record in runners[tree](workload, components, page_size, (op,)):
                        record.update(round=round_index, tree=tree, workload=workload,
                                      components=components, page_size=page_size)
                        records.append(record)
                        progress.op(where, record)
            progress.shape_done(len(trees))
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
