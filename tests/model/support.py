"""Shared setup of the reference-model tests: workloads, small caches, broken variants.

Pools are sized so that eviction happens all the time (the FULL pool turns over several
times per run) while a few requests still fit side by side.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from radixkv import CacheConfig
from radixkv.cache import Lease
from radixkv.model import (
    DEFAULT_LAYERS,
    Decoder,
    Engine,
    ModelConfig,
    Reference,
    RequestSpec,
    WorkloadConfig,
    build,
)

COMBOS = list(DEFAULT_LAYERS)
PAGES = [1, 16]
WINDOW = 20
CAPACITY = 384
SWA_CAPACITY = 256
STATES = 32


def combo_id(combo: tuple[str, ...]) -> str:
    return "+".join(combo)


@functools.cache
def workload(kind: str = "mixed", seed: int = 1, **shape: int) -> list[RequestSpec]:
    """8 four-turn chats over 2 system prompts and 3 branching few-shot families."""
    return build(WorkloadConfig(kind=kind, chats=8, turns=4, seed=seed, **shape))


@functools.cache
def reference(layers: tuple[str, ...], window: int = WINDOW, seed: int = 1) -> Reference:
    """The uncached runs of one model, shared by every test that uses it."""
    return Reference(Decoder(ModelConfig(layers=layers, window=window, seed=seed)))


def model_reference(combo: tuple[str, ...]) -> Reference:
    return reference(DEFAULT_LAYERS[combo])


def small_cache(combo: tuple[str, ...], page: int, **overrides: Any) -> CacheConfig:
    """A cache for ``combo`` with small pools (whole pages) and the model's window."""
    settings: dict[str, Any] = {"capacity": CAPACITY, "page_size": page, "components": combo}
    if "swa" in combo:
        settings.update(sliding_window=WINDOW, swa_capacity=SWA_CAPACITY)
    if "mamba" in combo:
        settings.update(mamba_track_interval=max(8, page), mamba_states=STATES)
    settings.update(overrides)
    return CacheConfig(**settings)


# ---------------------------------------------------------------------- broken variants


class NoStateCopyEngine(Engine):
    """Broken: forgets to copy the cached recurrent state, starts every request from zeros
    (the KV of the reused prefix is still used)."""

    def _start_state(self, lease: Lease) -> None:
        if lease.state_slot is not None:
            self.memory.zero_state(lease.state_slot)


class LateSlideEngine(Engine):
    """Broken: extends by the sampled token *before* releasing the SWA slots that left the
    window, so ``slide_window`` counts a token whose KV is not computed yet and releases
    one page too many."""

    def _decode(self, run: Any) -> bool:
        token = int(np.argmax(run.record.logits[-1]))
        run.record.outputs.append(token)
        if len(run.record.outputs) == run.record.spec.decode:
            return True
        self.cache.extend(run.lease, [token])
        run.sequence.append(token)
        self.cache.slide_window(run.lease)
        if self._compute(run, len(run.sequence) - 1):
            self.cache.commit(run.lease, run.computed)
        return False
