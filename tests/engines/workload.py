"""The multi-turn workload every engine test runs, and how two runs are compared.

A shared 64-token system prompt and conversations of 2-3 turns, each turn's prompt = the
previous prompt + the previous output + new user tokens, sent turn by turn (the active
conversations of a turn as one batch), greedy; then a control pair: the longest final prompt,
and the same with token 3 changed (a model blind to its KV would answer both alike).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .checkpoint import VOCAB_SIZE
from .harness import EngineProcess, Result

SYSTEM_LEN = 64
TURNS = (3, 3, 2, 2)  # turns per conversation
MAX_NEW_TOKENS = 8
LOGPROB_ATOL = 1e-5
FIRST_TOKEN = 3  # ids 0-2 are pad/bos/eos in the tiny config
EVICTING_POOL_TOKENS = 176  # below the ~330 tokens of the turn-2 batch; a long request fits


@dataclass
class Workload:
    system: list[int]
    user_turns: list[list[list[int]]]  # [conversation][turn] -> new user tokens


def make_workload(seed: int = 1234) -> Workload:
    rng = random.Random(seed)

    def tokens(n: int) -> list[int]:
        return [rng.randrange(FIRST_TOKEN, VOCAB_SIZE) for _ in range(n)]

    system = tokens(SYSTEM_LEN)
    user_turns = [[tokens(rng.randint(6, 14)) for _ in range(turns)] for turns in TURNS]
    return Workload(system, user_turns)


@dataclass
class Run:
    prompts: list[list[list[int]]] = field(default_factory=list)  # [turn][request]
    results: list[list[Result]] = field(default_factory=list)  # [turn][request]
    conversations: list[list[int]] = field(default_factory=list)  # [turn][request] -> conv
    control: list[Result] = field(default_factory=list)  # [original, one token changed]
    startup_s: float = 0.0


def run_workload(engine: EngineProcess, workload: Workload) -> Run:
    """Turn by turn; in each turn the active conversations go to the engine as one batch."""
    run = Run(startup_s=engine.startup_s or 0.0)
    history = [list(workload.system) for _ in workload.user_turns]
    for turn in range(max(TURNS)):
        active = [c for c, turns in enumerate(workload.user_turns) if turn < len(turns)]
        prompts = [history[c] + workload.user_turns[c][turn] for c in active]
        results = engine.generate(prompts, max_new_tokens=MAX_NEW_TOKENS)
        for c, prompt, result in zip(active, prompts, results):
            assert len(result.output_ids) == MAX_NEW_TOKENS
            history[c] = prompt + result.output_ids
        run.prompts.append(prompts)
        run.results.append(results)
        run.conversations.append(active)
    # Negative control: the longest final prompt, and the same with token 3 changed.
    final = max((p for turn in run.prompts for p in turn), key=len)
    changed = list(final)
    changed[3] = FIRST_TOKEN + (changed[3] - FIRST_TOKEN + 1) % (VOCAB_SIZE - FIRST_TOKEN)
    run.control = [engine.generate([final], MAX_NEW_TOKENS)[0],
                   engine.generate([changed], MAX_NEW_TOKENS)[0]]
    return run


def assert_same(reference: list[Result], other: list[Result], what: str) -> None:
    for i, (a, b) in enumerate(zip(reference, other)):
        assert a.output_ids == b.output_ids, f"{what}, request {i}: greedy tokens differ"
        diff = max(abs(x - y) for x, y in zip(a.output_logprobs, b.output_logprobs))
        assert diff <= LOGPROB_ATOL, f"{what}, request {i}: logprobs differ by {diff:.2e}"


