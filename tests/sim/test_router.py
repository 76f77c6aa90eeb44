"""Several engines behind a router; the KV-aware router reads the engines' KV events."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv.sim.cluster import SimConfig

from .support import hits, request, run, tokens

SHARED = tokens(0, 32)


def repeats(count: int) -> list:  # type: ignore[type-arg]
    """``count`` requests for the shared prefix plus a fresh question, 10 s apart."""
    return [request(i, 10.0 * i, np.concatenate((SHARED, tokens(1000 + 10 * i, 4))))
            for i in range(count)]


def test_round_robin_alternates_and_loses_the_first_hit_on_each_engine() -> None:
    result = run(repeats(4), engines=2, router="round-robin")
    assert [r.engine for r in result.records] == [0, 1, 0, 1]
    assert hits(result) == [0, 0, 32, 32]
    assert result.records[1].losses["other_engine"] == 32  # cached on the other engine
    assert result.records[1].losses["not_cached_yet"] == 0
    assert result.records[3].losses["other_engine"] == 0  # engine 1 computed it for r1


def test_a_prefix_no_engine_computed_yet_is_not_cached_yet_not_other_engine() -> None:
    # r0 and r1 arrive together on two engines: neither had computed the shared 32 tokens
    workload = [request(i, 0.0, np.concatenate((SHARED, tokens(1000 + 10 * i, 4))))
                for i in range(2)]
    result = run(workload, engines=2, router="round-robin")
    assert [r.engine for r in result.records] == [0, 1]
    assert result.records[1].losses["not_cached_yet"] == 32
    assert result.records[1].losses["other_engine"] == 0


def test_kv_aware_routing_follows_the_cached_prefix() -> None:
    # after r0 ran on engine 0, its events tell the router engine 0 holds the prefix
    result = run(repeats(4), engines=2, router="kv-aware")
    assert [r.engine for r in result.records] == [0, 0, 0, 0]
    assert hits(result) == [0, 32, 32, 32]
    resident = result.engines[0].resident
    assert resident is not None and resident.longest(_keys(SHARED)) == 32
    assert result.engines[1].resident is not None
    assert result.engines[1].resident.longest(_keys(SHARED)) == 0


def _keys(prompt: np.ndarray) -> list[int]:
    from radixkv.sim.keys import page_keys

    keys: list[int] = page_keys(prompt, 4).tolist()
    return keys


def test_least_loaded_spreads_simultaneous_arrivals() -> None:
    workload = [request(i, 0.0, tokens(100 * i, 12), output=5) for i in range(4)]
    result = run(workload, engines=2, router="least-loaded")
    assert sorted(r.engine for r in result.records) == [0, 0, 1, 1]


def test_unknown_router_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown router"):
        SimConfig(None, 2, "random")  # type: ignore[arg-type]


def test_a_turn_routed_away_from_its_history_counts_it_as_another_engines() -> None:
    first = request(0, 0.0, SHARED, output=9)
    second = request(1, 0.0, np.concatenate((SHARED, first.output, tokens(900, 3))),
                     parent=0, delay=5.0)
    result = run([first, second], engines=2, router="round-robin")
    assert [r.engine for r in result.records] == [0, 1]
    # 32 prompt tokens and 8 fed answer tokens ran on engine 0: none is reusable on 1
    assert result.records[1].losses["other_engine"] == 40
    assert result.records[1].losses["not_cached_yet"] == 0
    assert result.records[1].losses["never_seen"] == 0
