"""Fixtures for the tests that run a real vLLM engine on CPU (``make test-engines``, in
``.venv-vllm``). Elsewhere each test module skips itself (``pytest.importorskip("vllm")``);
this file imports neither torch nor vLLM at module level."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..checkpoint import write_checkpoint
from ..workload import Run, make_workload, run_workload
from .engine import VLLM_SKIP_REASON, VLLMEngine
from .runs import RUNS

Done = tuple[Run, dict[str, Any]]


@pytest.fixture(scope="session")
def vllm_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny seeded Llama of ``tests/engines/checkpoint.py`` (std 0.05 weights, head
    size 64: vLLM's CPU attention refuses 16), written once per session."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip(VLLM_SKIP_REASON)
    return write_checkpoint(tmp_path_factory.mktemp("tiny-llama-vllm"), seed=0)


@pytest.fixture(scope="session")
def vllm_run(vllm_checkpoint: Path, engine_logs: Path) -> Callable[[str], Done]:
    """``vllm_run(name) -> (Run, stats)``: the workload on an engine started with
    ``RUNS[name]``, once per session; ``stats`` are read after the workload."""
    memo: dict[str, Done] = {}

    def run(name: str) -> Done:
        if name not in memo:
            with VLLMEngine(vllm_checkpoint, log_dir=engine_logs, **RUNS[name]) as engine:
                done = run_workload(engine, make_workload())  # type: ignore[arg-type]
                memo[name] = (done, engine.stats())
        return memo[name]

    return run
