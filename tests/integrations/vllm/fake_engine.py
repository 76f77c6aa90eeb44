"""A stand-in for vLLM's scheduler and worker around the connector's scheduler side, with KV
that is a checkable function of each token's prefix (no vLLM, no torch).

Each step follows vLLM 0.32's order: running requests first (a decode token or the next
prefill chunk; a request that finds no free block preempts the newest running one, whose
blocks are freed and whose computed count drops to 0), then, in a step without preemption,
waiting requests (``matched`` -> blocks -> ``allocated``; a request ``matched`` answers
``None`` for waits, first in line, until the next step); then ``step`` builds the plan; the
worker loads, runs the "forward" and saves; then computed counts advance, a request that
computed all its tokens samples one, and one with all its outputs finishes.

The forward checks what a real model would read: every position before the chunk must hold,
in the request's vLLM slot, the KV of exactly that position's prefix (the oracle). It then
writes the chunk's own KV. Mismatches are counted, never raised, so a negative control can
show that they are seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from radixkv.integrations.vllm.scheduler import SchedulerSide


@dataclass
class FakeRequest:
    request_id: str
    prompt_token_ids: list[int]
    max_tokens: int = 4
    cache_salt: str | None = None
    lora_request: Any = None
    mm_features: Any = None
    all_token_ids: list[int] = field(default_factory=list)
    num_computed_tokens: int = 0
    outputs: int = 0

    def __post_init__(self) -> None:
        self.all_token_ids = list(self.prompt_token_ids)

    def kv(self, position: int) -> float:
        """The oracle: the KV of ``position`` depends on the namespace and every token up
        to and including it."""
        key = (self.cache_salt, tuple(self.all_token_ids[: position + 1]))
        return float(hash(key) % 1_000_003)


class FakeEngine:
    """``num_blocks`` blocks of ``block_size`` slots; at most ``budget`` tokens a step."""

    def __init__(self, side: SchedulerSide, num_blocks: int, rows: int,
                 budget: int = 64) -> None:
        self.side, self.block_size, self.budget = side, side.block_size, budget
        self.kv = np.full(num_blocks * self.block_size, np.nan)
        self.rows = np.full(rows, np.nan)
        self.free_blocks = list(range(num_blocks))
        self.blocks: dict[str, list[int]] = {}
        self.waiting: list[FakeRequest] = []
        self.running: list[FakeRequest] = []
        self.finished: list[FakeRequest] = []
        self.mismatches = 0
        self.cached: dict[str, int] = {}  # request id -> tokens loaded at admission
        self.preemptions = 0
        self.deferred = 0

    def add(self, *requests: FakeRequest) -> None:
        self.waiting.extend(requests)

    def run(self, max_steps: int = 1000) -> None:
        for _ in range(max_steps):
            if not self.waiting and not self.running:
                return
            self.step()
        raise AssertionError("the fake engine did not drain its requests")

    def step(self) -> None:
        scheduled: dict[str, int] = {}
        budget = self.budget
        preempted = self._schedule_running(scheduled, budget)
        budget -= sum(scheduled.values())
        if not preempted:
            self._schedule_waiting(scheduled, budget)
        plan = self.side.step(scheduled, self.blocks.__getitem__, preempted)
        self.kv[plan.loads.slots] = self.rows[plan.loads.rows]
        by_id = {request.request_id: request for request in self.running}
        for request_id, count in scheduled.items():
            self._forward(by_id[request_id], count)
        self.rows[plan.saves.rows] = self.kv[plan.saves.slots]
        for request_id, count in scheduled.items():
            self._advance(by_id[request_id], count)

    def _schedule_running(self, scheduled: dict[str, int], budget: int) -> list[str]:
        preempted: list[str] = []
        for request in list(self.running):
            if request not in self.running or budget <= 0:
                continue
            count = min(len(request.all_token_ids) - request.num_computed_tokens, budget)
            while not self._grow(request, request.num_computed_tokens + count):
                victim = self.running[-1]
                self._preempt(victim, scheduled)
                preempted.append(victim.request_id)
                if victim is request:
                    break
            else:
                scheduled[request.request_id] = count
                budget -= count
        return preempted

    def _schedule_waiting(self, scheduled: dict[str, int], budget: int) -> None:
        skipped: list[FakeRequest] = []
        while self.waiting and budget > 0:
            request = self.waiting.pop(0)
            external = self.side.matched(request, 0)
            if external is None:  # ask again next step, first in line
                skipped.append(request)
                self.deferred += 1
                continue
            count = min(len(request.all_token_ids) - external, budget)
            if not self._grow(request, external + count):
                self.waiting.insert(0, request)
                break
            self.side.allocated(request, external, self.blocks[request.request_id])
            self.cached.setdefault(request.request_id, external)
            request.num_computed_tokens = external
            self.running.append(request)
            scheduled[request.request_id] = count
            budget -= count
        self.waiting[:0] = skipped

    def _grow(self, request: FakeRequest, tokens: int) -> bool:
        table = self.blocks.setdefault(request.request_id, [])
        need = -(-tokens // self.block_size) - len(table)
        if need > len(self.free_blocks):
            return False
        for _ in range(max(0, need)):
            table.append(self.free_blocks.pop(0))
        return True

    def _preempt(self, request: FakeRequest, scheduled: dict[str, int]) -> None:
        self.running.remove(request)
        scheduled.pop(request.request_id, None)
        self.free_blocks.extend(self.blocks.pop(request.request_id))
        request.num_computed_tokens = 0
        self.waiting.insert(0, request)
        self.preemptions += 1

    def _slots(self, request: FakeRequest, positions: Sequence[int]) -> np.ndarray:
        table = np.asarray(self.blocks[request.request_id], dtype=np.int64)
        where = np.asarray(positions, dtype=np.int64)
        slots: np.ndarray = table[where // self.block_size] * self.block_size \
            + where % self.block_size
        return slots

    def _forward(self, request: FakeRequest, count: int) -> None:
        start = request.num_computed_tokens
        read = self.kv[self._slots(request, range(start))]
        expected = np.array([request.kv(p) for p in range(start)])
        self.mismatches += int(np.sum(read != expected))
        new = range(start, start + count)
        self.kv[self._slots(request, new)] = [request.kv(p) for p in new]

    def _advance(self, request: FakeRequest, count: int) -> None:
        request.num_computed_tokens += count
        if request.num_computed_tokens < len(request.all_token_ids):
            return  # a prefill chunk: nothing sampled yet
        request.all_token_ids.append(3 + int(request.kv(request.num_computed_tokens - 1)) % 97)
        request.outputs += 1
        if request.outputs == request.max_tokens:
            self._finish(request)

    def _finish(self, request: FakeRequest) -> None:
        self.side.finished(request.request_id)
        self.running.remove(request)
        self.free_blocks.extend(self.blocks.pop(request.request_id))
        self.finished.append(request)
