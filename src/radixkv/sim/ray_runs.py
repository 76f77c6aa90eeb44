"""The runs of ``radixkv sim ... --ray ADDRESS``: one Ray task per run, on a cluster that
is already running (``ray start --head`` prints its address).

The requests go into the cluster's object store once and every task reads them from there.
A task runs :func:`~radixkv.sim.parallel.simulate_run`, the function a local worker process
runs, and returns the same :class:`~radixkv.sim.parallel.RunOutput`, so a sweep on Ray
reports what ``--jobs`` reports. A Ray worker process runs one task at a time and each run
frees its cache before it returns, so a worker's memory does not grow with the number of
runs; this process keeps a finished run's output in the object store only until it is
yielded. Every node needs radixkv (the same version) and the driver's version of Ray.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Generator, Sequence

import ray
from ray.exceptions import RayError, RayTaskError

from ..progress import ProgressBar
from .command import split_address
from .parallel import PlannedRun, RunFailed, RunOutput, simulate_run
from .requests import SimRequest

PROBE_SECONDS = 5.0
"""How long the cluster's address may take to accept a connection before it is refused:
Ray's own connect retries for minutes on an address where nothing listens."""


def run_on_ray(requests: list[SimRequest], plan: Sequence[PlannedRun], address: str,
               bar: ProgressBar) -> Generator[RunOutput, None, None]:
    """Each run of ``plan`` as a task on the cluster at ``address``; yield the outputs in
    plan order. The bar counts finished runs. Raises ``ValueError`` when the cluster cannot
    be reached and :class:`RunFailed`, naming the run, when a task fails. Closing the
    iterator early cancels the tasks not finished; the connection ends either way."""
    _connect(address)
    try:
        shared = ray.put(requests)
        task = ray.remote(simulate_run)
        yield from _in_plan_order(plan, [task.remote(shared, run, None) for run in plan], bar)
    finally:
        ray.shutdown()  # the job ends: whatever it still runs on the cluster is stopped


def _connect(address: str) -> None:
    host, port = split_address(address)
    try:
        socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
    except OSError as exc:
        raise ValueError(f"no Ray cluster answers at {address}: {exc}") from None
    try:  # Ray's INFO lines and the workers' output stay on the cluster
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, RuntimeError) as exc:
        raise ValueError(f"cannot join the Ray cluster at {address}: {exc}") from None


def _in_plan_order(plan: Sequence[PlannedRun], waiting: list[ray.ObjectRef[RunOutput]],
                   bar: ProgressBar) -> Generator[RunOutput, None, None]:
    """Wait for the tasks (one per run, in plan order), redrawing the bar; yield each
    output once those before it came, and let go of it. A task that failed raises
    :class:`RunFailed` when its turn comes."""
    bar.prefix, bar.unit = "Ray tasks", "runs"
    position = {ref: number for number, ref in enumerate(waiting)}
    ready: dict[int, ray.ObjectRef[RunOutput]] = {}
    turn = 0
    try:
        while turn < len(plan):
            done, waiting = ray.wait(waiting, num_returns=1, timeout=0.1)
            ready.update((position.pop(ref), ref) for ref in done)
            bar.update(len(plan) - len(waiting), len(plan))
            while turn in ready:
                yield _result(plan[turn], ready.pop(turn))
                turn += 1
    finally:
        for ref in waiting:
            ray.cancel(ref, force=True)


def _result(run: PlannedRun, ref: ray.ObjectRef[RunOutput]) -> RunOutput:
    try:
        output: RunOutput = ray.get(ref)
    except RayTaskError as exc:
        cause = exc.cause if exc.cause is not None else exc
        raise RunFailed(f"run {run.label!r} failed on Ray: {cause}") from None
    except RayError as exc:  # a worker or node lost, an object lost, ...
        raise RunFailed(f"run {run.label!r} failed on Ray: {exc}") from None
    return output
