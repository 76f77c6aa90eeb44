"""Requests of a workload and what the engine records about each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class RequestSpec:
    """One request of a workload.

    Its prompt is the whole sequence of request ``parent`` (prompt and outputs: the
    previous turn of a chat), if any, followed by ``tokens``; it then decodes ``decode``
    tokens greedily. ``group`` names what it belongs to (a chat, a few-shot family) for
    the per-group verdicts.
    """

    rid: int
    group: str
    tokens: tuple[int, ...]
    decode: int
    parent: int | None = None

    def __post_init__(self) -> None:
        if self.decode < 1:
            raise ValueError(f"request {self.rid}: decode must be >= 1")
        if self.parent is None and not self.tokens:
            raise ValueError(f"request {self.rid}: a prompt needs at least one token")


@dataclass
class RequestRecord:
    """What running one request produced.

    ``logits[i]`` is the logits row of position ``first + i``: every position the engine
    computed (the prompt past the reused prefix, then every fed-back output). ``reused``:
    prompt tokens whose KV came from the cache; ``lent[name]``: what cache component
    ``name`` lent at admission: for a per-token component, the tokens of its KV (for a
    windowed one, the part of its window inside the reused prefix), for a state component
    1 when the request started from a cached state, else 0. ``attempts`` > 1 when the
    engine preempted it and ran it again (``lent`` is then the last admission's).
    """

    spec: RequestSpec
    prompt: tuple[int, ...]
    reused: int = 0
    lent: dict[str, int] = field(default_factory=dict)
    outputs: list[int] = field(default_factory=list)
    logits: list[np.ndarray] = field(default_factory=list)
    attempts: int = 0

    @property
    def first(self) -> int:
        """Position of the first computed token (= ``reused``)."""
        return self.reused

    @property
    def sequence(self) -> tuple[int, ...]:
        """Prompt then outputs: what a follow-up turn starts with."""
        return self.prompt + tuple(self.outputs)


def resolve_prompt(spec: RequestSpec, done: Mapping[int, RequestRecord]) -> tuple[int, ...]:
    """The prompt of ``spec`` once its parent (if any) has finished."""
    if spec.parent is None:
        return spec.tokens
    return done[spec.parent].sequence + spec.tokens
