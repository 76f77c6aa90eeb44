"""The connector's worker side: applies each step's plan between vLLM's KV cache and the
row buffer it owns (``rows`` rows of a :class:`~.rows.PagedKV`'s row shape).

Loads run before the step's forward (``start_load_kv``), saves after it (``wait_for_save``),
both synchronously: by the time vLLM frees a finished request's blocks or schedules the next
step, this step's rows are written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch  # type: ignore[import-not-found, unused-ignore]

from radixkv.integrations.vllm.plan import StepPlan, Transfer
from radixkv.integrations.vllm.rows import PagedKV

__all__ = ["WorkerSide"]


class WorkerSide:
    """The row buffer of ``rows`` rows and the copies into and out of vLLM's KV cache, seen
    through the :class:`~.rows.PagedKV` that ``paged_kv`` makes of vLLM's KV caches."""

    def __init__(self, rows: int, paged_kv: Callable[[Mapping[str, Any]], PagedKV]) -> None:
        self.rows = rows
        self._paged_kv = paged_kv
        self.kv: PagedKV | None = None
        self.buffer: Any = None
        self.counters = {"loaded_rows": 0, "saved_rows": 0, "steps": 0}
        self.seconds = {"load": 0.0, "save": 0.0}
        """Time spent copying, per direction (``time.perf_counter``)."""

    def register(self, kv_caches: Mapping[str, Any]) -> None:
        """Take vLLM's per-layer KV caches (in model order) and allocate the row buffer.
        Raises ``ValueError`` for caches ``paged_kv`` does not support."""
        self.kv = self._paged_kv(kv_caches)
        self.buffer = torch.zeros((self.rows, *self.kv.row_shape), dtype=self.kv.dtype)

    def load(self, plan: StepPlan) -> None:
        """Write the plan's loaded rows into vLLM's slots."""
        if len(plan.loads):
            start = time.perf_counter()
            kv, rows, slots = self._parts(plan.loads)
            kv.write(slots, self.buffer.index_select(0, rows))
            self.counters["loaded_rows"] += len(rows)
            self.seconds["load"] += time.perf_counter() - start

    def save(self, plan: StepPlan) -> None:
        """Write the plan's saved vLLM slots into their rows."""
        self.counters["steps"] += 1
        if len(plan.saves):
            start = time.perf_counter()
            kv, rows, slots = self._parts(plan.saves)
            self.buffer.index_copy_(0, rows, kv.read(slots))
            self.counters["saved_rows"] += len(rows)
            self.seconds["save"] += time.perf_counter() - start

    def _parts(self, transfer: Transfer) -> tuple[PagedKV, Any, Any]:
        if self.kv is None:
            raise RuntimeError("radixkv: a KV copy before vLLM registered its KV caches")
        rows = torch.from_numpy(np.ascontiguousarray(transfer.rows, dtype=np.int64))
        slots = torch.from_numpy(np.ascontiguousarray(transfer.slots, dtype=np.int64))
        return self.kv, rows, slots
