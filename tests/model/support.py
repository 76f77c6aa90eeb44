"""Shared setup of the reference-model tests: workloads, small caches, broken variants.

Pools are sized so that eviction happens all the time (the FULL pool turns over several
times per run, the windowed pools are smaller still) while a few requests still fit side by
side.
"""

from __future__ import annotations

import functools
import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from radixkv import CacheConfig
from radixkv.cli import parse_verify
from radixkv.model import (
    DEFAULT_LAYERS,
    Engine,
    ModelConfig,
    Reference,
    RequestSpec,
    VerifyReport,
    WorkloadConfig,
    build,
    command,
)
from radixkv.model.caches import CacheSizes, cache_config
from radixkv.model.model_config import combinations
from radixkv.model.reference import shared_reference

COMBOS = combinations()
"""Every supported combination (from ``radixkv.supported_combinations()``)."""
CHUNKED_COMBOS = [combo for combo in COMBOS if "chunked" in combo]
PAGES = [1, 16]
WINDOW = 20
CHUNK = 32
"""The model's local-attention chunk: a multiple of both page sizes, so that at page 16
half the page boundaries fall inside a chunk."""
CAPACITY = 384
SWA_CAPACITY = 256
CHUNKED_CAPACITY = 256
STATES = 32


@dataclass(frozen=True)
class DefaultRun:
    """``radixkv verify`` with its defaults (what ``make demo`` runs): exit code, output,
    and per (combination, page size) the cache it used and its report."""

    code: int
    out: str
    runs: dict[tuple[tuple[str, ...], int], tuple[CacheConfig, VerifyReport]]


@functools.cache
def default_run() -> DefaultRun:
    """The default verify run, once per test session (the demo test and the exactness
    test both read it)."""
    runs: dict[tuple[tuple[str, ...], int], tuple[CacheConfig, VerifyReport]] = {}

    def sink(combo: tuple[str, ...], page: int, config: CacheConfig,
             report: VerifyReport) -> None:
        runs[combo, page] = (config, report)

    out = io.StringIO()
    code = command.run(parse_verify([]), out, io.StringIO(), sink)
    return DefaultRun(code, out.getvalue(), runs)


def combo_id(combo: tuple[str, ...]) -> str:
    return "+".join(combo)


@functools.cache
def workload(kind: str = "mixed", seed: int = 0, **shape: int) -> list[RequestSpec]:
    """8 four-turn chats over 2 system prompts and 3 branching few-shot families: with the
    model and pools below, what ``radixkv verify`` (``make demo``) runs by default."""
    settings = {"chats": 8, "turns": 4, **shape}
    return build(WorkloadConfig(kind=kind, seed=seed, **settings))


def reference(layers: tuple[str, ...], window: int = WINDOW, seed: int = 0,
              chunk: int = CHUNK) -> Reference:
    """The uncached runs of one model, shared by every test (and verify run) that uses it."""
    return shared_reference(ModelConfig(layers=layers, window=window, chunk=chunk, seed=seed))


def model_reference(combo: tuple[str, ...]) -> Reference:
    return reference(DEFAULT_LAYERS[combo])


def small_cache(combo: tuple[str, ...], page: int, **sizes: Any) -> CacheConfig:
    """A cache for ``combo`` with small pools (whole pages) and the model's window and
    chunk; ``sizes`` override :class:`CacheSizes` fields."""
    settings: dict[str, Any] = {"capacity": CAPACITY, "swa_capacity": SWA_CAPACITY,
                                "chunked_capacity": CHUNKED_CAPACITY, "states": STATES}
    settings.update(sizes)
    model = ModelConfig(layers=DEFAULT_LAYERS[combo], window=WINDOW, chunk=CHUNK)
    return cache_config(combo, page, model, CacheSizes(**settings))


# ---------------------------------------------------------------------- broken variants


class NoStateCopyEngine(Engine):
    """Broken: forgets to copy the cached recurrent state, starts every request from zeros
    (the KV of the reused prefix is still used)."""

    def _ready(self, run: Any) -> None:
        if run.held.state_slot is not None:
            self.memory.zero_state(run.held.state_slot)
        run.ready = True


class LateSlideEngine(Engine):
    """Broken: extends by the sampled token *before* releasing the slots that left the
    window, so ``slide_window`` counts a token whose KV is not computed yet: for SWA it
    releases one page too many, for chunked local attention the whole chunk the last token
    of a chunk still reads."""

    def _decode(self, run: Any) -> bool:
        token = int(np.argmax(run.record.logits[-1]))
        run.record.outputs.append(token)
        if run.fed == run.feeds:
            return True
        self.cache.extend(run.held, [token])
        run.extended += 1
        position = len(run.sequence)
        run.sequence.append(token)
        self.cache.slide_window(run.held)
        self._compute(run, position)
        run.fed += 1
        self.steps.decoded(run, position, 1)
        return False


class PastChunkStartModel(ModelConfig):
    """Broken: chunked local layers that also attend to the token just before their chunk
    (``[p - p % C - 1, p]``), which a cache with ``ChunkedLocal(chunk=C)`` does not keep."""

    def span_start(self, kind: str, position: int) -> int:
        start = super().span_start(kind, position)
        return max(0, start - 1) if kind == "chunked" else start
