"""The simulator with a host tier: load-backs that take the cost model's copy time, leases
that wait for them before prefill, and the device/host split of hits in the report."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from radixkv.host import Copy, Direction, HostTier
from radixkv.sim.cluster import simulate
from radixkv.sim.copies import SimCopyEngine
from radixkv.sim.report import summarize
from radixkv.sim.setup import Shape
from radixkv.sim.summary import render, render_table
from radixkv.sim.workloads import make_workload

from .support import UNIT_COST, request, run, tokens

HOST_COST = replace(UNIT_COST, host_bandwidth=4.0)
"""One second a step, four tokens a second each way between device and host."""


def _scenario(host: bool) -> list:  # type: ignore[type-arg]
    requests = [request(0, 0.0, tokens(0, 12)), request(1, 10.0, tokens(100, 20)),
                request(2, 20.0, np.concatenate((tokens(0, 12), tokens(500, 4))))]
    cache = {"host": HostTier(capacity=64)} if host else {}
    return run(requests, capacity=24, cost=HOST_COST, cache=cache).records  # type: ignore[arg-type]


def test_a_demoted_prefix_is_loaded_back_and_its_request_waits_for_the_copy() -> None:
    # r0 (12 tokens) is backed up as it is committed, then demoted when r1 (20) needs the
    # device; r2 reuses r0's 12 tokens from the host: 12 rows at 4/s land 3 s after its
    # admission at t=20, then one step prefills its last 4 tokens: first token at t=24
    first, second, third = _scenario(host=True)
    assert (first.hit, second.hit, third.hit) == (0, 0, 12)
    assert third.host_hit == 12
    assert third.admitted == 20.0 and third.first_token == 24.0 and third.ttft == 4.0


def test_without_the_tier_the_same_request_recomputes_at_once() -> None:
    third = _scenario(host=False)[2]
    assert (third.hit, third.host_hit, third.ttft) == (0, 0, 1.0)


def test_copies_queue_on_their_direction_s_stream_and_wait_blocks_the_clock() -> None:
    now = [0.0]
    engine = SimCopyEngine(2.0, lambda: now[0])
    rows = np.arange(4)
    one = engine.submit([Copy("full", Direction.TO_HOST, rows, rows)])  # done at 2
    two = engine.submit([Copy("full", Direction.TO_HOST, rows, rows)])  # queued: done at 4
    back = engine.submit([Copy("full", Direction.TO_DEVICE, rows[:2], rows[:2])])  # at 1
    assert engine.poll() == [] and engine.next_completion() == 1.0
    now[0] = 2.0
    assert [c.ticket for c in engine.poll()] == [back, one]
    assert [c.ticket for c in engine.wait([two])] == [two]
    assert engine.blocked_until == 4.0 and engine.blocked == 2.0 and engine.in_flight == 0
    with pytest.raises(ValueError):
        SimCopyEngine(0.0, lambda: 0.0)


@pytest.fixture(scope="module")
def chats() -> list:  # type: ignore[type-arg]
    """Chats whose reused history is several times the device memory."""
    return make_workload("chat", sessions=32, turns=4, rate=4.0, think=20.0, seed=3)


@pytest.mark.parametrize("policy", ["write_through", "write_back"])
def test_a_host_tier_raises_the_hit_rate_when_reuse_exceeds_device_memory(
        chats: list, policy: str) -> None:  # type: ignore[type-arg]
    device = 24_000
    plain = summarize(simulate(chats, Shape().config(device, chats)))
    result = simulate(chats, Shape(host_capacity=2_000_000, write_policy=policy)
                      .config(device, chats))
    for engine in result.engines:
        engine.cache.check_invariants()
        assert engine.cache.stats().active_leases == 0
    with_host = summarize(result, "with_host")
    assert with_host["token_hit_rate"] > plain["token_hit_rate"] + 0.2
    assert plain["hit_rate_by_tier"]["host"] is None
    by_tier = with_host["hit_rate_by_tier"]
    assert by_tier["host"] > 0.2
    assert by_tier["device"] + by_tier["host"] == pytest.approx(with_host["token_hit_rate"])
    assert with_host["host_hit_tokens"] == result.engines[0].cache.stats().host.host_hit_tokens
    host = with_host["engines"][0]["host"]
    assert host["load_batches"] > 0 and host["copy_seconds"]["to_device"] > 0
    assert with_host["config"]["write_policy"] == policy
    assert "token hit rate by tier: device" in render(with_host)
    assert "of it host" in render_table([plain, with_host])


def test_the_parser_offers_every_write_policy() -> None:
    from radixkv.host import WRITE_POLICIES
    from radixkv.sim import command

    assert tuple(WRITE_POLICIES) == command.WRITE_POLICIES


def test_a_load_back_a_wait_inside_the_cache_saw_first_is_applied_at_the_next_poll() -> None:
    # a write-back eviction waits for its backup; the copy engine reports a load-back that
    # lands meanwhile, which the cache keeps for its next poll: the engine, finding every
    # running request waiting and no copy in flight, polls instead of stalling (this chat
    # run hits that once)
    chats = make_workload("chat", sessions=64, turns=6, rate=4.0, think=20.0)
    result = simulate(chats, Shape(host_capacity=2_000_000, write_policy="write_back")
                      .config(30_000, chats))
    (engine,) = result.engines
    engine.cache.check_invariants()
    assert not engine.busy and engine.copies is not None and engine.copies.in_flight == 0
    assert summarize(result)["hit_rate_by_tier"]["host"] > 0.5
