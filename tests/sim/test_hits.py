"""Hits are hits (issue #34, item 2): a request's hits never exceed what earlier requests
of the trace had, whatever the timing, memory or tiers; what a request computes again
after its own preemption is recomputation, never a hit; and where neither timing nor the
tree's node-granular eviction can interfere, the hit count never falls as capacity grows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from radixkv.host import HostTier
from radixkv.sim import bound
from radixkv.sim.requests import SimRequest

from .support import UNIT_COST, bounded_steps, request, run, tokens

PAGE = 4


def allowed_hits(requests: list[SimRequest], page: int) -> list[int]:
    """Per request, by brute force: the longest page-exact prefix of its prompt (all but the
    last token) that an earlier request's prompt or cached answer (all but its last token)
    in the same namespace began with."""
    allowed = []
    for index, current in enumerate(requests):
        cap = (len(current.prompt) - 1) // page * page
        best = 0
        for earlier in requests[:index]:
            if earlier.namespace != current.namespace:
                continue
            sequence = list(earlier.prompt)
            if earlier.cache_output:
                sequence += list(earlier.output[:-1])
            shared = 0
            for mine, theirs in zip(current.prompt[:cap], sequence):
                if mine != theirs:
                    break
                shared += 1
            best = max(best, shared // page * page)
        allowed.append(best)
    return allowed


def _generated(draws: list[tuple[int, int, int, int, bool]], spacing: float
               ) -> list[SimRequest]:
    """A small trace: each prompt is an earlier prompt's prefix (or nothing) plus one of a
    few token blocks, so prompts share prefixes of every length."""
    blocks = [tokens(1000 * b, 3 + 5 * b) for b in range(4)]
    requests: list[SimRequest] = []
    for rid, (base, cut, block, output, cached) in enumerate(draws):
        head = requests[base % len(requests)].prompt if requests and base else tokens(0, 0)
        prompt = np.concatenate((head[: cut % (len(head) + 1)], blocks[block]))
        requests.append(request(rid, rid * spacing, prompt, output=output,
                                cache_output=cached))
    return requests


DRAWS = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 40), st.integers(0, 3),
                           st.integers(1, 12), st.booleans()), min_size=2, max_size=8)
CACHES = [{}, {"host": HostTier(capacity=24, write_policy="write_through")},
          {"host": HostTier(capacity=48, write_policy="write_back")}]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(draws=DRAWS, pages=st.integers(3, 24), spacing=st.sampled_from([0.0, 0.5, 3.0]),
       reserve=st.sampled_from([1, 4]), budget=st.sampled_from([4, 64]),
       cache=st.sampled_from(CACHES))
def test_no_request_hits_more_than_earlier_requests_had(
        draws: list[tuple[int, int, int, int, bool]], pages: int, spacing: float,
        reserve: int, budget: int, cache: dict[str, object]) -> None:
    # concurrent arrivals and memory near one request's size: requests preempt, come back
    # and find their own committed pages cached; none of that may count as a hit
    requests = _generated(draws, spacing)
    with bounded_steps(5_000):
        result = run(requests, capacity=PAGE * pages, decode_reserve=reserve,
                     max_batch_tokens=budget, cache=cache,
                     cost=replace(UNIT_COST, host_bandwidth=4.0))
    allowed_by_hand = allowed_hits(requests, PAGE)
    assert bound.allowed_hits(requests, PAGE) == allowed_by_hand  # the trace's own bound
    for record, allowed in zip(result.records, allowed_by_hand, strict=True):
        if record.rejected:
            continue
        assert 0 <= record.host_hit <= record.hit <= allowed
        assert record.recomputed >= 0  # every uncached token computed at least once
        assert record.prefilled == record.prompt_len - record.hit + record.recomputed
        if not record.preemptions:
            assert record.recomputed == 0


def _repeats(draws: list[tuple[int, int, int]]) -> list[SimRequest]:
    """Arrivals far apart (each request runs alone, so time cannot interfere); each prompt
    is fresh whole pages, an earlier prompt again, or an earlier prompt plus fresh pages,
    answers not cached: every match then covers whole tree nodes, so evicting whole nodes
    evicts exactly what page-exact LRU would."""
    requests: list[SimRequest] = []
    for rid, (kind, base, size) in enumerate(draws):
        fresh = tokens(1000 * rid, PAGE * size)
        earlier = requests[base % len(requests)].prompt if requests else fresh
        prompt = [fresh, earlier, np.concatenate((earlier, fresh))][kind if requests else 0]
        requests.append(request(rid, 1000.0 * rid, prompt, output=1 + base % 5,
                                cache_output=False))
    return requests


@settings(max_examples=40, deadline=None, derandomize=True)
@given(draws=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 20), st.integers(1, 4)),
                      min_size=2, max_size=12))
def test_without_timing_effects_hits_never_fall_as_device_capacity_grows(
        draws: list[tuple[int, int, int]]) -> None:
    requests = _repeats(draws)
    largest = max(len(r.prompt) + len(r.output) for r in requests)
    total = sum(len(r.prompt) + len(r.output) for r in requests)
    counts = [sum(r.hit for r in run(requests, capacity=capacity, decode_reserve=1).records)
              for capacity in range(-(-largest // PAGE) * PAGE, total + 2 * PAGE, PAGE)]
    assert counts == sorted(counts)
    assert counts[-1] == sum(allowed_hits(requests, PAGE))  # room for all: the trace's bound
