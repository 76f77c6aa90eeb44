"""The uncached run: every sequence computed from scratch, nothing shared.

This is what a serving engine with caching disabled computes, and what every cached run is
compared against. It uses the same :meth:`Decoder.step` on private pools (slot = position).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .decoder import Decoder, TokenSlots
from .memory import Memory
from .model_config import ModelConfig


@dataclass(frozen=True)
class Generation:
    """A prompt run from scratch: ``logits[p]`` is the logits row of position ``p`` (for
    every prompt token and every fed-back output), ``outputs`` the greedy tokens."""

    prompt: tuple[int, ...]
    outputs: tuple[int, ...]
    logits: np.ndarray


def generate(decoder: Decoder, prompt: tuple[int, ...], decode: int) -> Generation:
    """Run ``prompt`` then greedily ``decode`` (>= 1) tokens from scratch. The last output
    is sampled but never fed back, so ``logits`` has ``len(prompt) + decode - 1`` rows."""
    if not prompt or decode < 1:
        raise ValueError("need a non-empty prompt and decode >= 1")
    total = len(prompt) + decode - 1
    config = decoder.config
    memory = Memory.scratch(config, total)
    rows = np.zeros((total, config.vocab_size), dtype=np.float64)
    sequence = list(prompt)
    outputs: list[int] = []
    for position in range(total):
        kv = {kind: np.arange(config.span_start(kind, position), position + 1, dtype=np.int64)
              for kind in config.attention_kinds}
        slots = TokenSlots(kv=kv, state=0)
        rows[position] = decoder.step(memory, sequence[position], position, slots)
        if position >= len(prompt) - 1:
            outputs.append(int(np.argmax(rows[position])))
            sequence.append(outputs[-1])
    return Generation(tuple(prompt), tuple(outputs), rows)


class Reference:
    """Memoized :func:`generate` for one decoder: a run of the same prompt is reused, so
    the uncached side of several cached runs of one model is computed once."""

    def __init__(self, decoder: Decoder) -> None:
        self.decoder = decoder
        self._runs: dict[tuple[tuple[int, ...], int], Generation] = {}

    def __call__(self, prompt: tuple[int, ...], decode: int) -> Generation:
        key = (prompt, decode)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = generate(self.decoder, prompt, decode)
        return run


@functools.lru_cache(maxsize=32)
def shared_reference(config: ModelConfig) -> Reference:
    """The :class:`Reference` of ``config``'s decoder, one per model config in the process
    (the last 32 used), so every run of one model, whatever its cache, computes each
    uncached prompt once."""
    return Reference(Decoder(config))
