"""Helpers of the simulator tests: hand-built requests, a unit cost model, one-call runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

import numpy as np

from radixkv import CacheConfig
from radixkv.sim.cluster import SimConfig, SimResult, simulate
from radixkv.sim.costs import CostModel
from radixkv.sim.engine import EngineConfig, SimEngine
from radixkv.sim.requests import SimRequest

UNIT_COST = CostModel("unit", full_layers=1, overhead=1.0, weights=0.0, linear=0.0,
                      attn_pair=0.0, kv_read=0.0, ssm_token=0.0, ssm_state=0.0)
"""Every step takes exactly one simulated second."""


def tokens(start: int, count: int) -> np.ndarray:
    return np.arange(start, start + count, dtype=np.uint32)


def request(rid: int, arrival: float, prompt: np.ndarray, output: int = 1,
            **extra: object) -> SimRequest:
    return SimRequest(rid, arrival, prompt, tokens(10_000_000 + 1000 * rid, output),
                      **extra)  # type: ignore[arg-type]


def run(requests: Sequence[SimRequest], *, capacity: int = 4096, page_size: int = 4,
        engines: int = 1, router: str = "round-robin", cost: CostModel = UNIT_COST,
        **engine: object) -> SimResult:
    """Simulate and audit every engine's cache at the end."""
    cache = CacheConfig(capacity=capacity, page_size=page_size,
                        **engine.pop("cache", {}))  # type: ignore[arg-type]
    config = SimConfig(EngineConfig(cache, cost, **engine), engines,  # type: ignore[arg-type]
                       router)
    result = simulate(requests, config)
    for sim_engine in result.engines:
        sim_engine.cache.check_invariants()
        assert not sim_engine.busy
        assert sim_engine.cache.stats().active_leases == 0
    return result


def hits(result: SimResult) -> list[int]:
    return [record.hit for record in result.records]


@contextmanager
def bounded_steps(limit: int) -> Iterator[None]:
    """Fail, instead of hanging, when the engines take ``limit`` steps in all."""
    steps = 0
    step = SimEngine.step

    def bounded(self: SimEngine, horizon: float) -> list[Any]:
        nonlocal steps
        steps += 1
        assert steps < limit, "the engine does not progress"
        return step(self, horizon)

    with patch.object(SimEngine, "step", bounded):
        yield
