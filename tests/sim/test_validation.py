"""The multi-turn closed form: with no eviction, turn r of a chat reuses everything before
its new message (the previous prompt and the fed part of the answer)."""

from __future__ import annotations

from radixkv.sim.workloads import make_workload

from .support import run


def test_chat_turns_reuse_the_whole_history_exactly() -> None:
    # user message u = 60, answer o = 4, no system prompt, page size 1: turn r's prompt is
    # (r + 1)·u + r·o tokens and the cache holds the previous prompt and the first o - 1
    # tokens of its answer (the last one is never fed back): r·(u + o) - 1 tokens.
    chats = make_workload("chat", sessions=3, turns=5, system_len=0, user_len=60,
                          output_len=4, think=1.0, rate=0.0)
    result = run(chats, page_size=1, capacity=1 << 16)
    for request, record in zip(chats, result.records):
        r = request.tags["turn"]
        assert isinstance(r, int)
        assert record.prompt_len == (r + 1) * 60 + r * 4
        assert record.hit == (r * 64 - 1 if r else 0)


def test_round_r_hit_rate_approaches_r_over_r_plus_one_for_short_answers() -> None:
    chats = make_workload("chat", sessions=2, turns=6, system_len=0, user_len=500,
                          output_len=1, rate=0.0)
    result = run(chats, page_size=1, capacity=1 << 16)
    for request, record in zip(chats, result.records):
        r = request.tags["turn"]
        assert isinstance(r, int)
        rate = record.hit / record.prompt_len
        assert abs(rate - r / (r + 1)) < 0.01
