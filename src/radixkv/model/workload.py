"""Seeded workloads with heavy prefix sharing for the exactness harness.

- ``chat``: multi-turn chats; each chat starts with one of a few shared system prompts and
  every turn's prompt is the previous turn's prompt and outputs plus a new user message;
- ``fewshot``: branching few-shot prompts: one shared instruction, then example lists that
  share their first examples and branch, then questions (some asked twice, so a whole
  prompt is cached);
- ``mixed``: both, interleaved.

Requests of different groups are interleaved in a seeded random order (a group keeps its
own order), so prefixes are shared across requests that run at the same time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .requests import RequestSpec

WORKLOADS = ("chat", "fewshot", "mixed")


@dataclass(frozen=True)
class WorkloadConfig:
    """Shape of a workload; lengths are means (each drawn in ``[0.5x, 1.5x]``)."""

    kind: str = "mixed"
    vocab_size: int = 64
    chats: int = 6
    turns: int = 3
    systems: int = 2
    system_len: int = 48
    user_len: int = 12
    families: int = 3
    shots: int = 4
    shot_len: int = 12
    questions: int = 3
    decode: int = 6
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in WORKLOADS:
            raise ValueError(f"unknown workload {self.kind!r}; known: {', '.join(WORKLOADS)}")


class _Builder:
    """Draws tokens and numbers requests."""

    def __init__(self, config: WorkloadConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.next_rid = 0

    def tokens(self, mean: int) -> tuple[int, ...]:
        count = self.rng.randint(max(1, mean // 2), max(1, mean + mean // 2))
        return tuple(self.rng.randrange(self.config.vocab_size) for _ in range(count))

    def spec(self, group: str, tokens: tuple[int, ...], parent: int | None) -> RequestSpec:
        self.next_rid += 1
        return RequestSpec(self.next_rid - 1, group, tokens, self.config.decode, parent)


def _chats(builder: _Builder) -> list[list[RequestSpec]]:
    config = builder.config
    systems = [builder.tokens(config.system_len) for _ in range(config.systems)]
    groups = []
    for chat in range(config.chats):
        system = systems[builder.rng.randrange(len(systems))]
        turns: list[RequestSpec] = []
        for _ in range(config.turns):
            parent = turns[-1].rid if turns else None
            prefix = () if turns else system
            turns.append(builder.spec(f"chat-{chat}", prefix + builder.tokens(config.user_len),
                                      parent))
        groups.append(turns)
    return groups


def _few_shot(builder: _Builder) -> list[list[RequestSpec]]:
    config = builder.config
    instruction = builder.tokens(config.system_len)
    shared = [builder.tokens(config.shot_len) for _ in range(config.shots)]
    groups = []
    for family in range(config.families):
        # family f keeps the first shots - f shared examples, then branches off
        kept = max(1, config.shots - family)
        own = [builder.tokens(config.shot_len) for _ in range(config.shots - kept)]
        prefix = instruction + sum(shared[:kept], ()) + sum(own, ())
        asked = [builder.tokens(config.user_len) for _ in range(config.questions)]
        asked.append(asked[0])  # the same prompt again: a whole-prompt hit
        groups.append([builder.spec(f"fewshot-{family}", prefix + q, None) for q in asked])
    return groups


def _interleave(rng: random.Random, groups: list[list[RequestSpec]]) -> list[RequestSpec]:
    queues = [list(group) for group in groups if group]
    order: list[RequestSpec] = []
    while queues:
        queue = queues[rng.randrange(len(queues))]
        order.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    return order


def build(config: WorkloadConfig) -> list[RequestSpec]:
    """The requests of a workload, in arrival order."""
    builder = _Builder(config)
    groups: list[list[RequestSpec]] = []
    if config.kind in ("chat", "mixed"):
        groups += _chats(builder)
    if config.kind in ("fewshot", "mixed"):
        groups += _few_shot(builder)
    return _interleave(builder.rng, groups)
