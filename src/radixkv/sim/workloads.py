"""Seeded workload generators. Each returns a list of :class:`SimRequest`, parents first.

Lengths are means; ``jitter`` (0 to 1) draws each length uniformly in
``[mean * (1 - jitter), mean * (1 + jitter)]`` (0: every length exactly the mean, what the
hand-computed tests use). Arrivals are Poisson with ``rate`` per second (``0``: all at 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from .requests import SimRequest, finite_non_negative, random_tokens

_MAY_BE_ZERO = frozenset({"seed", "system_len"})
"""Int parameters that may be 0 (a chat's ``system_len``: no system prompt); the other
counts and lengths are at least 1."""


@dataclass(frozen=True)
class Common:
    """Every workload's parameters are checked on construction: ints (counts, lengths, the
    seed) are ints, >= 1 except those in :data:`_MAY_BE_ZERO`; floats (rates, times, skew)
    are finite and >= 0, ``jitter`` at most 1. Raises ``ValueError`` naming the first bad
    parameter."""

    seed: int = 0
    rate: float = 2.0
    jitter: float = 0.0

    def __post_init__(self) -> None:
        for spec in fields(self):
            _check_parameter(spec.name, spec.type, getattr(self, spec.name))
        if self.jitter > 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter!r}")


def _check_parameter(name: str, kind: object, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if kind in (int, "int"):
        least = 0 if name in _MAY_BE_ZERO else 1
        if not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    elif not finite_non_negative(value):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True)
class SystemPromptConfig(Common):
    """``groups`` shared system prompts × ``prompts`` questions each (skew > 0: group
    popularity falls as ``1 / rank**skew`` instead of equal shares). ``tenants`` > 1: each
    request belongs to one of that many cache namespaces at random (tenants never share)."""

    groups: int = 8
    prompts: int = 32
    system_len: int = 1024
    question_len: int = 128
    output_len: int = 128
    skew: float = 0.0
    tenants: int = 1


@dataclass(frozen=True)
class ChatConfig(Common):
    """``sessions`` multi-turn chats of ``turns`` turns; each turn's prompt is the whole
    history (optional shared ``system_len`` prompt, earlier messages and answers) plus a new
    ``user_len`` message; the next turn arrives ``think`` seconds after the answer."""

    sessions: int = 64
    turns: int = 6
    system_len: int = 256
    user_len: int = 256
    output_len: int = 256
    think: float = 5.0
    rate: float = 1.0


@dataclass(frozen=True)
class FewShotConfig(Common):
    """``families`` few-shot prompts of up to ``shots`` examples; each of ``questions``
    requests per family takes the first ``k`` examples (k uniform in 1..shots) and a new
    question, so prompts of a family branch at example boundaries."""

    families: int = 8
    shots: int = 8
    shot_len: int = 256
    questions: int = 32
    question_len: int = 64
    output_len: int = 64


@dataclass(frozen=True)
class AgentConfig(Common):
    """``agents`` tool loops of ``steps`` steps over a ``context_len`` context; each step's
    prompt is the previous prompt, its answer (``output_len``) and the tool's output
    (``tool_len``); the next step starts ``tool_time`` seconds after the answer."""

    agents: int = 16
    steps: int = 10
    context_len: int = 4096
    tool_len: int = 512
    output_len: int = 128
    tool_time: float = 1.0
    rate: float = 0.5


class _Builder:
    """Shared state of one generation: the generator, ids and arrival clock."""

    def __init__(self, common: Common) -> None:
        self.rng = np.random.default_rng(common.seed)
        self.common = common
        self.requests: list[SimRequest] = []
        self.clock = 0.0

    def length(self, mean: int) -> int:
        jitter = self.common.jitter
        if jitter <= 0 or mean <= 1:
            return max(1, mean)
        low, high = mean * (1 - jitter), mean * (1 + jitter)
        return max(1, round(self.rng.uniform(low, high)))

    def tokens(self, mean: int) -> np.ndarray:
        return random_tokens(self.rng, self.length(mean))

    def next_arrival(self) -> float:
        if self.common.rate > 0:
            self.clock += float(self.rng.exponential(1.0 / self.common.rate))
        return self.clock

    def add(self, prompt: np.ndarray, output_len: int, **extra: Any) -> SimRequest:
        arrival = extra.pop("arrival", None)
        if arrival is None and extra.get("parent") is None:
            arrival = self.next_arrival()
        request = SimRequest(len(self.requests), 0.0 if arrival is None else arrival,
                             prompt, self.tokens(output_len), **extra)
        self.requests.append(request)
        return request


def system_prompts(config: SystemPromptConfig) -> list[SimRequest]:
    build = _Builder(config)
    systems = [build.tokens(config.system_len) for _ in range(config.groups)]
    weights = 1.0 / np.arange(1, config.groups + 1) ** config.skew
    total = config.groups * config.prompts
    if config.skew == 0:
        groups = np.repeat(np.arange(config.groups), config.prompts)
        build.rng.shuffle(groups)
    else:
        groups = build.rng.choice(config.groups, total, p=weights / weights.sum())
    for group in groups.tolist():
        prompt = np.concatenate((systems[group], build.tokens(config.question_len)))
        extra: dict[str, Any] = {}
        if config.tenants > 1:
            extra["namespace"] = (f"tenant-{int(build.rng.integers(config.tenants))}", None)
        build.add(prompt, config.output_len, tags={"group": group}, **extra)
    return build.requests


def _turns(build: _Builder, start: np.ndarray, count: int, growth: int, output_len: int,
           delay: float, tags: dict[str, object]) -> None:
    """A chain of ``count`` requests, each extending the previous prompt and answer."""
    prompt, parent = start, None
    for turn in range(count):
        extra: dict[str, Any] = {"tags": {**tags, "turn": turn}}
        if parent is not None:
            extra.update(parent=parent.rid, delay=delay)
            prompt = np.concatenate((parent.prompt, parent.output, build.tokens(growth)))
        parent = build.add(prompt, output_len, **extra)


def chat(config: ChatConfig) -> list[SimRequest]:
    build = _Builder(config)
    system = build.tokens(config.system_len) if config.system_len else np.zeros(0, np.uint32)
    for session in range(config.sessions):
        first = np.concatenate((system, build.tokens(config.user_len)))
        _turns(build, first, config.turns, config.user_len, config.output_len,
               config.think, {"session": session})
    return build.requests


def fewshot(config: FewShotConfig) -> list[SimRequest]:
    build = _Builder(config)
    for family in range(config.families):
        shots = [build.tokens(config.shot_len) for _ in range(config.shots)]
        for _ in range(config.questions):
            k = int(build.rng.integers(1, config.shots + 1))
            prompt = np.concatenate((*shots[:k], build.tokens(config.question_len)))
            build.add(prompt, config.output_len, tags={"family": family, "shots": k})
    return build.requests


def agent(config: AgentConfig) -> list[SimRequest]:
    build = _Builder(config)
    for loop in range(config.agents):
        _turns(build, build.tokens(config.context_len), config.steps, config.tool_len,
               config.output_len, config.tool_time, {"session": loop})
    return build.requests


WORKLOADS: dict[str, tuple[type[Common], Callable[[Any], list[SimRequest]]]] = {
    "system": (SystemPromptConfig, system_prompts),
    "chat": (ChatConfig, chat),
    "fewshot": (FewShotConfig, fewshot),
    "agent": (AgentConfig, agent),
}


def make_workload(name: str, **params: Any) -> list[SimRequest]:
    """Build workload ``name`` with its config's defaults overridden by ``params``
    (unknown names raise ``ValueError``)."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
    config_type, generate = WORKLOADS[name]
    known = {f.name: f.type for f in fields(config_type)}
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"workload {name!r} has no parameter(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    return generate(replace(config_type(), **params))
