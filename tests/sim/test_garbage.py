"""A simulation runs without the cyclic garbage collector, which is sound only while a run
makes no cyclic garbage: everything it drops must be freed by reference counting."""

from __future__ import annotations

import gc

import pytest

from radixkv.sim.cluster import simulate
from radixkv.sim.setup import Shape
from radixkv.sim.workloads import make_workload

SHAPES = {
    "full": Shape(),
    "full+swa, host tier": Shape(components=("full", "swa"), window=256,
                                 host_capacity=20_000),
    "full+mamba, no hints": Shape(components=("full", "mamba"), track_interval=128,
                                  hints=False),
    "three engines, kv-aware": Shape(engines=3, router="kv-aware"),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_run_under_eviction_and_preemption_leaves_no_cyclic_garbage(name: str) -> None:
    requests = make_workload("chat", sessions=40, turns=3, system_len=128, user_len=64,
                             output_len=48, rate=20.0, think=1.0)
    config = SHAPES[name].config(3_000, requests)  # small: evictions and preemptions
    gc.collect()  # what earlier tests left
    result = simulate(requests, config)  # kept: its live cycles are not garbage
    assert gc.collect() == 0
    assert result.engines[0].cache.stats().evicted_tokens > 0
    assert sum(engine.preemptions for engine in result.engines) > 0
