"""Shared setup of the host-tier exactness tests: a device pool too small to keep what the
workload reuses, a host pool that keeps all of it, and broken variants of the engine and
of the copy engine.

The device FULL pool (128 slots) barely holds the longest request of the workload, so
almost every prefix a request reuses was evicted from device memory since it was cached
and can only come back from host memory (4096 slots, never short). MAMBA has 12 device
states for 256 on host.
"""

from __future__ import annotations

import functools
import io
from typing import Any

from radixkv import CacheConfig, demo
from radixkv.cli import parse_verify
from radixkv.host import Copy, Direction, NumpyCopyEngine
from radixkv.model import Engine, RequestSpec, VerifyReport, command

from .support import DefaultRun, small_cache, workload

DEVICE = 128
HOST = 4096
DEVICE_STATES = 12
HOST_STATES = 256
WRITE_POLICIES = ["write_through", "write_through_selective", "write_back"]


def host_cache(combo: tuple[str, ...], page: int, policy: str = "write_through",
               **sizes: Any) -> CacheConfig:
    """A cache for ``combo`` with the tiny device pools and large host pools above."""
    settings: dict[str, Any] = {
        "capacity": DEVICE, "swa_capacity": DEVICE, "chunked_capacity": DEVICE,
        "states": DEVICE_STATES, "host_capacity": HOST, "host_states": HOST_STATES,
        "write_policy": policy}
    settings.update(sizes)
    return small_cache(combo, page, **settings)


@functools.cache
def host_workload() -> list[RequestSpec]:
    """Half the default workload: 4 four-turn chats, 2 few-shot families."""
    return workload(chats=4, families=2)


# ---------------------------------------------------------------------- broken variants


class EagerLoadEngine(Engine):
    """Broken: computes as soon as a request is admitted, without waiting for its
    load-back to be acknowledged (so it reads whatever its device slots held before the
    copy lands); it waits only where the cache insists, before its first commit or
    checkpoint."""

    def _start(self, spec: RequestSpec, prompt: tuple[int, ...]) -> Any:
        run = super()._start(spec, prompt)
        if not run.ready:
            self._ready(run)
        return run

    def _prefill_to(self, run: Any, stop: int) -> None:
        super()._prefill_to(run, stop)  # a state saved or a commit follows
        if not run.held.ready:
            self.cache.wait(run.held)


class DroppingCopyEngine(NumpyCopyEngine):
    """Broken: acknowledges every load-back of component :attr:`dropped` without moving
    its rows (the device slots keep whatever they held)."""

    dropped = "full"

    def _move(self, copies: list[Copy]) -> None:
        super()._move([copy for copy in copies if copy.component != self.dropped
                       or copy.direction is not Direction.TO_DEVICE])


def dropping(component: str) -> type[NumpyCopyEngine]:
    """A :class:`DroppingCopyEngine` that drops ``component``'s load-backs."""
    return type(f"Dropping{component.title()}CopyEngine", (DroppingCopyEngine,),
                {"dropped": component})


class ShiftedBackupEngine(NumpyCopyEngine):
    """Broken: every backup reads the device rows one slot off (the next slot of each
    source), so the host holds a neighbour's KV."""

    def _move(self, copies: list[Copy]) -> None:
        moved = []
        for copy in copies:
            if copy.direction is Direction.TO_HOST:
                rows = self.buffer(copy.component, "device")
                limit = 1 if rows is None else len(rows)
                copy = Copy(copy.component, copy.direction, (copy.source + 1) % limit,
                            copy.destination)
            moved.append(copy)
        super()._move(moved)



@functools.cache
def host_demo_run() -> DefaultRun:
    """The host-tier part of ``make demo`` (``radixkv verify`` with ``demo.HOST_ARGS``),
    once per test session."""
    runs: dict[tuple[tuple[str, ...], int], tuple[CacheConfig, VerifyReport]] = {}

    def sink(combo: tuple[str, ...], page: int, config: CacheConfig,
             report: VerifyReport) -> None:
        runs[combo, page] = (config, report)

    out = io.StringIO()
    code = command.run(parse_verify(demo.HOST_ARGS), out, io.StringIO(), sink)
    return DefaultRun(code, out.getvalue(), runs)
