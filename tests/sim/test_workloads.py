"""Workload generators: seeded, structured as documented."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from radixkv.driver import check_workload
from radixkv.sim.workloads import make_workload


def test_the_same_seed_gives_the_same_workload_and_another_seed_another() -> None:
    first = make_workload("chat", sessions=3, turns=2, seed=5)
    again = make_workload("chat", sessions=3, turns=2, seed=5)
    other = make_workload("chat", sessions=3, turns=2, seed=6)
    assert all(np.array_equal(a.prompt, b.prompt) and np.array_equal(a.output, b.output)
               for a, b in zip(first, again))
    assert not np.array_equal(first[0].prompt, other[0].prompt)


def test_a_chat_turn_is_the_previous_prompt_and_answer_plus_a_message() -> None:
    chats = make_workload("chat", sessions=2, turns=3, system_len=16, user_len=8,
                          output_len=5, think=2.0)
    check_workload(chats)
    assert len(chats) == 6
    first, second = chats[0], chats[1]
    assert len(first.prompt) == 16 + 8 and first.parent is None
    assert second.parent == first.rid and second.delay == 2.0
    history = np.concatenate((first.prompt, first.output))
    assert np.array_equal(second.prompt[: len(history)], history)
    assert len(second.prompt) == len(history) + 8
    assert np.array_equal(chats[3].prompt[:16], first.prompt[:16])  # the shared system prompt


def test_system_prompt_groups_share_exactly_their_system_prompt() -> None:
    requests = make_workload("system", groups=2, prompts=3, system_len=32, question_len=8)
    assert len(requests) == 6
    groups = [r.tags["group"] for r in requests]
    assert sorted(groups) == [0, 0, 0, 1, 1, 1]
    by_group = {g: [r.prompt for r in requests if r.tags["group"] == g] for g in (0, 1)}
    assert np.array_equal(by_group[0][0][:32], by_group[0][1][:32])
    assert not np.array_equal(by_group[0][0][:32], by_group[1][0][:32])
    assert all(r.arrival <= s.arrival for r, s in itertools.pairwise(requests))


def test_fewshot_prompts_branch_at_example_boundaries() -> None:
    requests = make_workload("fewshot", families=1, shots=3, shot_len=10, questions=6,
                             question_len=4)
    for request in requests:
        assert len(request.prompt) == 10 * request.tags["shots"] + 4  # type: ignore[operator]
    longest = max(requests, key=lambda r: len(r.prompt))
    for request in requests:
        k = 10 * request.tags["shots"]  # type: ignore[operator]
        assert np.array_equal(request.prompt[:k], longest.prompt[:k])


def test_an_agent_step_adds_the_answer_and_the_tool_output() -> None:
    steps = make_workload("agent", agents=1, steps=3, context_len=40, tool_len=6,
                          output_len=2)
    assert [len(r.prompt) for r in steps] == [40, 48, 56]


def test_jitter_varies_lengths_around_the_mean() -> None:
    lengths = {len(r.prompt) for r in make_workload("system", groups=1, prompts=20,
                                                    question_len=100, jitter=0.5)}
    assert len(lengths) > 1


def test_unknown_workloads_and_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown workload"):
        make_workload("nope")
    with pytest.raises(ValueError, match="no parameter"):
        make_workload("chat", turnz=3)


@pytest.mark.parametrize(("name", "params", "why"), [
    ("chat", {"sessions": 0}, "sessions must be an int >= 1, got 0"),
    ("chat", {"turns": 2.5}, "turns must be an int >= 1, got 2.5"),
    ("chat", {"user_len": "long"}, "user_len must be a number, got 'long'"),
    ("chat", {"think": -1}, "think must be a finite number >= 0, got -1"),
    ("chat", {"rate": float("nan")}, "rate must be a finite number >= 0, got nan"),
    ("chat", {"jitter": 1.5}, "jitter must be between 0 and 1"),
    ("chat", {"seed": True}, "seed must be a number, got True"),
    ("system", {"skew": float("inf")}, "skew must be a finite number >= 0"),
    ("system", {"tenants": 0}, "tenants must be an int >= 1"),
    ("fewshot", {"shots": -2}, "shots must be an int >= 1"),
    ("agent", {"output_len": 0}, "output_len must be an int >= 1"),
])
def test_a_bad_workload_parameter_is_refused_by_name(
        name: str, params: dict[str, object], why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        make_workload(name, **params)


def test_zero_is_a_valid_seed_system_prompt_length_and_rate() -> None:
    chats = make_workload("chat", sessions=2, turns=1, system_len=0, rate=0, seed=0)
    assert [r.arrival for r in chats] == [0.0, 0.0]  # rate 0: all at 0
    assert len(chats[0].prompt) == 256  # the message alone: no system prompt
