"""The runs of ``radixkv sim``, one process each up to ``--jobs`` at a time.

Every run builds its own engines and cache from the same requests, so runs are independent
and a sweep is embarrassingly parallel. With one job (or one run) the runs go in this
process, one after another, with a progress bar per run. With more, a pool of worker
processes runs them: each worker gets the requests once (inherited, with no copy, where the
platform forks and this process runs no other thread; otherwise pickled once per worker),
simulates the runs it is handed and sends back only what the report needs (the summary, the
TTFT values and the per-request table). Results come back in plan order, so the printed
summaries and the report are what one job gives; a progress bar counts the requests of
every run. Each process, this one with one job, holds one simulation (one cache) at a time.
With a Ray cluster's address instead, every run is a task there (:mod:`radixkv.sim.ray_runs`).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from ..progress import Progress, ProgressBar
from .cluster import simulate
from .report import records_table, summarize, ttft_values
from .requests import SimRequest
from .setup import Shape


@dataclass(frozen=True)
class PlannedRun:
    """One run of a plan: a setup, its FULL capacity (``None``: unbounded), its label."""

    shape: Shape
    capacity: int | None
    label: str


@dataclass(frozen=True)
class RunOutput:
    """What the report keeps of a run: its summary, TTFT values and per-request rows."""

    report: dict[str, Any]
    ttft: list[float]
    rows: list[dict[str, Any]]


def default_jobs() -> int:
    """The CPUs this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


class RunFailed(Exception):
    """A run failed where its traceback is not this process's (a Ray task); the message
    names the run and what it raised."""


def run_plan(requests: list[SimRequest], plan: Sequence[PlannedRun], jobs: int,
             bar: ProgressBar, ray: str | None = None) -> Iterator[tuple[PlannedRun, RunOutput]]:
    """Simulate every run of ``plan``; yield each with its output, in plan order. ``jobs``:
    at most this many runs at once (each in its own process when more than one). ``ray``:
    a Ray cluster's address (``HOST:PORT``; ``jobs`` is then unused): each run is a task
    there, and the outputs are what the local paths give. Stopping early (closing the
    iterator) stops the worker processes (the Ray tasks). Raises ``ValueError`` when Ray
    is missing or the cluster cannot be reached, :class:`RunFailed` when a Ray task fails;
    a local run's own exception otherwise."""
    try:
        if ray is not None:
            with closing(_ray_runner()(requests, plan, ray, bar)) as remote:
                yield from zip(plan, remote, strict=True)
        elif jobs <= 1 or len(plan) <= 1:
            for number, run in enumerate(plan, 1):
                bar.prefix = f"run {number}/{len(plan)}"
                output = simulate_run(requests, run, bar.update)
                bar.close()
                yield run, output
        else:
            outputs = _in_pool(requests, plan, min(jobs, len(plan)), bar)
            yield from zip(plan, outputs, strict=True)
    finally:
        bar.close()  # an error message starts on a line of its own


def _ray_runner() -> Callable[[list[SimRequest], Sequence[PlannedRun], str, ProgressBar],
                              Generator[RunOutput, None, None]]:
    """:func:`radixkv.sim.ray_runs.run_on_ray`, imported only when asked for (Ray is an
    extra, and heavy to import)."""
    try:
        from .ray_runs import run_on_ray
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "ray":
            raise
        raise ValueError("--ray needs Ray on this machine, the cluster's version: "
                         "pip install 'radixkv[ray]'") from None
    return run_on_ray


def simulate_run(requests: list[SimRequest], run: PlannedRun,
                 progress: Progress | None) -> RunOutput:
    """One run, reduced to what the report keeps. Its engines and cache are freed before
    it returns: the tree's nodes form cycles, which only a collection frees, and a full
    collection can wait for many runs (each holding its whole cache) in one process."""
    result = simulate(requests, run.shape.config(run.capacity, requests), progress)
    output = RunOutput(summarize(result, run.label, run.capacity),
                       ttft_values(result), records_table(result.records))
    del result
    gc.collect()
    return output


def _in_pool(requests: list[SimRequest], plan: Sequence[PlannedRun], jobs: int,
             bar: ProgressBar) -> Iterator[RunOutput]:
    """Run the plan in ``jobs`` worker processes; redraw the bar while waiting."""
    fork = "fork" in multiprocessing.get_all_start_methods() \
        and threading.active_count() == 1  # a fork copies no other thread (nor its locks)
    context = multiprocessing.get_context("fork" if fork else "spawn")
    done = context.Array("q", len(plan), lock=False)  # requests finished, per run
    total = len(requests) * len(plan)
    bar.prefix = f"runs 0/{len(plan)} done"
    with context.Pool(jobs, _start_worker, (requests, list(plan), done)) as pool:
        outputs = pool.imap(_run_in_worker, range(len(plan)))
        for finished in range(1, len(plan) + 1):
            while True:
                try:
                    output: RunOutput = outputs.next(timeout=0.1)
                    break
                except multiprocessing.TimeoutError:
                    bar.update(sum(done), total)
            done[finished - 1] = len(requests)  # outputs come in plan order
            bar.prefix = f"runs {finished}/{len(plan)} done"
            bar.update(sum(done), total)
            yield output


_worker: dict[str, Any] = {}
"""A worker process's requests, plan and progress counters (set once, at its start)."""


def _start_worker(requests: list[SimRequest], plan: list[PlannedRun], done: Any) -> None:
    # Ctrl-C reaches the whole process group: this process stops the workers, one line
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker.update(requests=requests, plan=plan, done=done)


def _run_in_worker(index: int) -> RunOutput:
    done = _worker["done"]

    def progress(finished: int, total: int) -> None:
        done[index] = finished

    return simulate_run(_worker["requests"], _worker["plan"][index], progress)
