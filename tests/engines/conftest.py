"""Fixtures for the tests that run a real SGLang engine on CPU (``make test-engines``).

These tests need ``.venv-sglang`` (torch, SGLang 0.5.23, the sgl_kernel stand-in), built by
``make engines-sglang``. In any other environment (the main ``.venv`` of ``make test``) each
test module skips itself (``pytest.importorskip`` at its top, with ``ENGINE_SKIP_REASON``), so
the reason shows in pytest's ``-rs`` summary; this file and ``harness.py`` import neither
torch nor sglang at module level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .checkpoint import write_checkpoint
from .harness import ENGINE_SKIP_REASON, EngineProcess, engine_stack_missing
from .workload import Run, make_workload, run_workload

# The stand-in package's source is not a test directory.
collect_ignore = ["sgl_kernel_standin"]


@pytest.fixture(scope="session")
def checkpoint_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny seeded Llama (config.json + model.safetensors), written once per session."""
    if engine_stack_missing():
        pytest.skip(ENGINE_SKIP_REASON)
    return write_checkpoint(tmp_path_factory.mktemp("tiny-llama"), seed=0)


@pytest.fixture(scope="session")
def engine_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("engine-logs")


@pytest.fixture(scope="session")
def start_engine(checkpoint_dir: Path, engine_logs: Path
                 ) -> Iterator[Callable[..., EngineProcess]]:
    """``start_engine(**server_args) -> EngineProcess`` on the tiny checkpoint.

    Keyword arguments are sglang ServerArgs fields (page_size, disable_radix_cache,
    radix_cache_backend, max_total_tokens, ...) plus ``preload=`` / ``env=`` (see
    ``harness.EngineProcess``). Every engine still open at the end of the session is shut
    down and its process group killed; close engines earlier (``with`` or ``.close()``) to
    keep memory low, each holds about 1 GB.
    """
    engines: list[EngineProcess] = []

    def start(**kwargs: Any) -> EngineProcess:
        kwargs.setdefault("log_dir", engine_logs)
        engine = EngineProcess(checkpoint_dir, **kwargs)
        engines.append(engine)
        return engine

    yield start
    for engine in engines:
        engine.close()


@pytest.fixture(scope="session")
def workload_run(checkpoint_dir: Path, engine_logs: Path
                 ) -> Callable[..., tuple[Run, str]]:
    """``workload_run(name, page_size, **engine_args) -> (Run, engine log)``: the workload
    of ``workload.py`` on an engine started for it, run once per ``(name, page_size)`` in
    the session (test modules share runs: each engine start costs 20-40 s)."""
    memo: dict[tuple[str, int], tuple[Run, str]] = {}

    def run(name: str, page_size: int, **extra: Any) -> tuple[Run, str]:
        key = (name, page_size)
        if key not in memo:
            with EngineProcess(checkpoint_dir, log_dir=engine_logs, page_size=page_size,
                               **extra) as engine:
                done = run_workload(engine, make_workload())
                memo[key] = (done, engine.log_path.read_text(errors="replace"))
        return memo[key]

    return run
