"""Small workloads whose hits, losses and times are computed by hand.

UNIT_COST makes every step one second; pages are 4 tokens; ``admit`` reuses at most
``len(prompt) - 1`` tokens, so the reusable part of a prompt of n tokens is the whole pages
of its first n - 1 tokens."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from radixkv import CacheConfig
from radixkv.errors import InvalidNamespaceError
from radixkv.sim.cluster import SimConfig, simulate
from radixkv.sim.engine import EngineConfig
from radixkv.sim.records import REASONS

from .support import UNIT_COST, bounded_steps, hits, request, run, tokens

A, B, C = tokens(0, 16), tokens(100, 8), tokens(200, 8)


def test_three_requests_hit_exactly_their_shared_pages() -> None:
    # r0: A (16 tokens) → nothing cached yet. r1: A+B (24) → reuses A's 16 tokens.
    # r2: A[:8]+C (16) → reuses 8 of A (its first 15 tokens hold two whole pages of A).
    workload = [request(0, 0.0, A), request(1, 10.0, np.concatenate((A, B)), output=3),
                request(2, 20.0, np.concatenate((A[:8], C)))]
    result = run(workload)
    assert hits(result) == [0, 16, 8]
    stats = result.engines[0].cache.stats()
    assert stats.hit_tokens == 24 and stats.match_tokens == 16 + 24 + 16
    first, second, third = result.records
    # one prefill step each; r1 then decodes 2 more steps in one jump
    assert (first.first_token, first.finished) == (1.0, 1.0)
    assert (second.first_token, second.finished) == (11.0, 13.0)
    assert (third.ttft, third.latency) == (1.0, 1.0)
    assert first.losses == dict.fromkeys(REASONS, 0) | {"never_seen": 12, "uncacheable_tail": 4}
    assert second.losses == dict.fromkeys(REASONS, 0) | {
        "hit": 16, "never_seen": 4, "uncacheable_tail": 4}
    assert third.losses == dict.fromkeys(REASONS, 0) | {
        "hit": 8, "never_seen": 4, "uncacheable_tail": 4}


def test_an_evicted_prefix_counts_as_evicted_full() -> None:
    # 32 slots: A (16) is cached, then an unrelated 24-token prompt needs 24 slots and
    # evicts A's node whole; A again finds nothing: 12 reusable tokens lost to eviction.
    workload = [request(0, 0.0, A), request(1, 10.0, tokens(500, 24)), request(2, 20.0, A)]
    result = run(workload, capacity=32)
    assert hits(result) == [0, 0, 0]
    assert result.records[2].losses["evicted_full"] == 12
    assert result.engines[0].cache.stats().evicted_tokens >= 16


def test_a_request_still_running_leaves_its_prefix_not_cached_yet() -> None:
    # both arrive at 0 and are admitted in the same step: the second cannot reuse the first
    workload = [request(0, 0.0, A, output=4), request(1, 0.0, np.concatenate((A, B)))]
    result = run(workload)
    assert hits(result) == [0, 0]
    assert result.records[1].losses["not_cached_yet"] == 16


def test_chunked_prefill_spreads_a_prompt_over_steps_within_the_token_budget() -> None:
    # a 20-token prompt with 8 tokens a step: chunks of 8, 8 and 4 → first token after 3 s
    result = run([request(0, 0.0, tokens(0, 20), output=2)], max_batch_tokens=8)
    record = result.records[0]
    assert (record.first_token, record.finished) == (3.0, 4.0)


def test_memory_pressure_preempts_the_newest_request_and_both_finish() -> None:
    # 32 slots, 4-token pages; two 12-token prompts each decode 19 more tokens, memory taken
    # 4 tokens ahead. Both are admitted at 0 (24 slots), first tokens at 1, and take a page
    # each at 1 (32 slots). At 5 both need another: r1, the newer, is preempted (its decode
    # page freed, its committed 12-token prompt left cached) and r0 takes the freed page; a
    # step that preempts admits no one. At 9, 13 and 17 r0's growth comes first and evicts
    # r1's cached prompt a page at a time, so r1's re-admission never fits while r0 runs. r0
    # finishes at 20 (19 decode steps after its first token); r1 is admitted again at 20 with
    # nothing left to reuse (its own 8 reusable tokens were held, then evicted), prefills
    # (21) and finishes 19 steps later: its whole prompt computed twice. No earlier request
    # had r1's tokens, so they are never_seen, not evicted hits.
    workload = [request(0, 0.0, tokens(0, 12), output=20),
                request(1, 0.0, tokens(300, 12), output=20)]
    result = run(workload, capacity=32, decode_reserve=4)
    older, newer = result.records
    assert (older.preemptions, older.first_token, older.finished) == (0, 1.0, 20.0)
    assert (newer.preemptions, newer.first_token, newer.finished) == (1, 1.0, 40.0)
    assert (newer.hit, newer.prefilled, newer.recomputed) == (0, 24, 12)
    assert newer.losses["never_seen"] == 8 and newer.losses["evicted_full"] == 0
    assert not older.rejected and not newer.rejected
    assert result.engines[0].preemptions == 1


def test_the_older_of_two_that_cannot_share_is_never_preempted_and_both_finish() -> None:
    # 24 slots; two 8-token prompts, 8 output tokens, memory taken 8 tokens ahead. r0 is
    # admitted at 0, first token at 1, and holds 16 slots (8 + 7 fed) until it finishes at
    # 8. r1 arrives at 3: its prompt fits the last 8 slots (first token at 4) but its
    # answer does not, so r1 itself is preempted, not the older r0. r1 waits until r0 is
    # done, finds its own first page (4 tokens) cached, prefills the rest (8 → 9) and
    # decodes 7 steps. Choosing the victim by admission order instead made them preempt
    # each other forever. That page is r1's own work, not a hit: no earlier request had
    # it. r1 computed 8 + 4 prompt tokens: 4 of them twice (recomputation).
    workload = [request(0, 0.0, tokens(0, 8), output=8),
                request(1, 3.0, tokens(300, 8), output=8)]
    with bounded_steps(1000):
        result = run(workload, capacity=24, decode_reserve=8)
    older, newer = result.records
    assert (older.preemptions, older.first_token, older.finished) == (0, 1.0, 8.0)
    assert (newer.preemptions, newer.first_token, newer.finished) == (1, 4.0, 16.0)
    assert (newer.hit, newer.prefilled, newer.recomputed) == (0, 12, 4)
    assert newer.losses == dict.fromkeys(REASONS, 0) | {"never_seen": 4, "uncacheable_tail": 4}
    assert not newer.rejected
    assert result.engines[0].preemptions == 1


def test_a_request_that_can_never_fit_is_rejected() -> None:
    result = run([request(0, 0.0, tokens(0, 40)), request(1, 1.0, tokens(100, 8))],
                 capacity=32)
    assert [r.rejected for r in result.records] == [True, False]
    assert result.records[0].first_token is None and result.records[0].latency is None


def test_the_next_turn_arrives_its_delay_after_the_answer() -> None:
    first = request(0, 5.0, A, output=3)
    second = request(1, 0.0, np.concatenate((A, first.output, B)), parent=0, delay=2.5)
    result = run([first, second])
    # r0: prefill 5→6, two decode steps →8; r1 arrives at 10.5 and reuses A and the two
    # fed answer tokens: 18 tokens, of which 16 make whole pages
    assert result.records[0].finished == 8.0
    assert result.records[1].arrival == 10.5
    assert hits(result) == [0, 16]


def test_answers_marked_not_cached_are_not_inserted() -> None:
    first = request(0, 0.0, A, output=9, cache_output=False)
    second = request(1, 20.0, np.concatenate((A, first.output[:8], B)))
    result = run([first, second])
    assert hits(result) == [0, 16]
    assert result.engines[0].cache.stats().aborted == 1


def test_another_namespace_s_prefix_counts_as_other_namespace() -> None:
    # the same prompt under two tenants: the second tenant cannot reuse the first's pages
    workload = [request(0, 0.0, A, namespace=("tenant-a", None)),
                request(1, 10.0, A, namespace=("tenant-b", None)),
                request(2, 20.0, A, namespace=("tenant-a", None))]
    result = run(workload)
    assert hits(result) == [0, 0, 12]
    assert result.records[1].losses["other_namespace"] == 12
    assert result.records[2].losses["other_namespace"] == 0


def test_tenants_split_a_system_prompt_workload_into_namespaces() -> None:
    from radixkv.sim.workloads import make_workload

    shared = make_workload("system", groups=2, prompts=6, system_len=64, question_len=8)
    split = make_workload("system", groups=2, prompts=6, system_len=64, question_len=8,
                          tenants=3)
    assert {r.namespace for r in split} <= {(f"tenant-{i}", None) for i in range(3)}
    one, three = run(shared), run(split)
    assert sum(hits(three)) < sum(hits(one))
    assert sum(r.losses["other_namespace"] for r in three.records) > 0


def test_a_run_switches_the_garbage_collector_off_and_back_on_even_on_error() -> None:
    during: list[bool] = []
    config = SimConfig(EngineConfig(CacheConfig(capacity=64, page_size=4), UNIT_COST))
    simulate([request(0, 0.0, A)], config, lambda done, total: during.append(gc.isenabled()))
    assert during == [False] and gc.isenabled()
    with pytest.raises(InvalidNamespaceError):  # raised inside the run, at the arrival
        simulate([request(0, 0.0, A, namespace=("tenant", 1.5))], config)
    assert gc.isenabled()
    gc.disable()  # a caller that runs without the collector keeps it off
    try:
        simulate([request(0, 0.0, A)], config)
        assert not gc.isenabled()
    finally:
        gc.enable()
