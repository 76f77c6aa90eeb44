"""Start a real SGLang engine on CPU in a child process and run token-id prompts on it.

    with EngineProcess(model_path, page_size=4, max_total_tokens=2048) as engine:
        results = engine.generate([[5, 6, 7], [5, 6, 8]], max_new_tokens=8)
        results[0].output_ids, results[0].output_logprobs, results[0].cached_tokens

Each engine runs in ``_engine_worker.py``, a process in a session of its own: closing the
handle asks it to shut SGLang down, then kills the process group whatever happened, so no
scheduler or detokenizer process outlives the handle (also at interpreter exit).

Why a child process and not ``sglang.Engine`` in the pytest process: the engine works
in-process (SGLang spawns its scheduler with multiprocessing's ``spawn``, which re-imports
pytest's main module harmlessly), but it installs signal handlers that kill its parent when
a scheduler dies, runs its own event loop, and a crash or hang would take pytest with it.
In a child process a failed start is an exception with the engine's log attached, and
``conn.poll`` bounds every wait.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .processes import close_worker, connect_worker

WORKER = Path(__file__).with_name("_engine_worker.py")

# Keyword arguments of sglang.Engine (ServerArgs fields) that run SGLang 0.5.23 on a CPU
# without sgl_kernel's real kernels. The KV pool on CPU is sized from host memory
# (mem_fraction_static of the free RAM, about 538k tokens at 0.05 on a 24 GB machine):
# max_total_tokens caps it; pass a small one to force eviction.
CPU_ENGINE_KWARGS: dict[str, Any] = {
    "device": "cpu",
    "attention_backend": "torch_native",
    "sampling_backend": "pytorch",
    "dtype": "float32",
    "disable_cuda_graph": True,
    "skip_tokenizer_init": True,
    "mem_fraction_static": 0.05,
    "max_total_tokens": 16384,
    "random_seed": 0,
    "log_level": "info",
}

# Environment of the engine processes. SGLANG_USE_CPU_ENGINE=1 selects the CPU platform
# (is_cpu() is False without it and SGLang tries CUDA).
ENGINE_ENV: dict[str, str] = {
    "SGLANG_USE_CPU_ENGINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

ENGINE_SKIP_REASON = (
    "needs .venv-sglang (torch, sglang 0.5.23, the sgl_kernel stand-in): `make test-engines`"
)


def engine_stack_missing() -> list[str]:
    """The modules of the engine stack this interpreter cannot import."""
    import importlib.util

    return [m for m in ("torch", "sglang", "sgl_kernel", "transformers", "safetensors")
            if importlib.util.find_spec(m) is None]


START_TIMEOUT_S = float(os.environ.get("ENGINE_START_TIMEOUT_S", "300"))
REQUEST_TIMEOUT_S = float(os.environ.get("ENGINE_REQUEST_TIMEOUT_S", "300"))


@dataclass(frozen=True)
class Result:
    """One request's greedy output."""

    output_ids: list[int]
    output_logprobs: list[float]
    cached_tokens: int
    prompt_tokens: int
    output_top_logprobs: list[list[tuple[float, int]]] | None = None


class EngineError(RuntimeError):
    pass


@dataclass
class EngineProcess:
    """An ``sglang.Engine`` in a child process. Extra keyword arguments are ServerArgs
    fields (``page_size``, ``disable_radix_cache``, ``radix_cache_backend``,
    ``max_total_tokens``, ``chunked_prefill_size``, ``schedule_policy``, ...) and override
    ``CPU_ENGINE_KWARGS``. ``preload`` names modules imported first in the worker and in
    SGLang's scheduler process (e.g. one that registers a radix cache backend).
    """

    model_path: str | Path
    preload: Sequence[str] = ()
    env: dict[str, str] = field(default_factory=dict)
    log_dir: str | Path | None = None
    server_args: dict[str, Any] = field(default_factory=dict)

    def __init__(self, model_path: str | Path, *, preload: Sequence[str] = (),
                 env: dict[str, str] | None = None, log_dir: str | Path | None = None,
                 **server_args: Any) -> None:
        self.model_path = model_path
        self.preload = tuple(preload)
        self.env = dict(env or {})
        self.server_args = server_args
        self._tmp = tempfile.TemporaryDirectory(prefix="engine-")
        self.log_path = Path(log_dir or self._tmp.name) / f"engine-{secrets.token_hex(3)}.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self.startup_s: float | None = None
        self._start()

    # ------------------------------------------------------------------ life cycle
    def _start(self) -> None:
        address = os.path.join(self._tmp.name, "sock")
        authkey = secrets.token_bytes(16)
        kwargs = {**CPU_ENGINE_KWARGS, "model_path": str(self.model_path), **self.server_args}
        config = {"address": address, "authkey": authkey.hex(), "engine_kwargs": kwargs,
                  "preload": list(self.preload)}
        config_path = os.path.join(self._tmp.name, "config.json")
        with open(config_path, "w") as f:
            json.dump(config, f)
        env = {**os.environ, **ENGINE_ENV, **self.env}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115 (the child keeps it)
        t0 = time.monotonic()
        self._proc = subprocess.Popen(
            [sys.executable, str(WORKER), config_path],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=env, cwd=self._tmp.name, start_new_session=True,
        )
        log.close()
        _LIVE.add(self)
        try:
            conn = connect_worker(self._proc, address, authkey, t0 + START_TIMEOUT_S)
            if conn is None:
                raise EngineError(f"engine worker exited ({self._proc.returncode}) or did "
                                  f"not listen\n{self.log_tail()}")
            self._conn = conn
            reply = self._recv(START_TIMEOUT_S - (time.monotonic() - t0), "start")
            self.startup_s = time.monotonic() - t0
            self.info = reply
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Shut the engine down (politely, then by killing its process group)."""
        proc, conn, self._conn = self._proc, self._conn, None
        close_worker(proc, conn)
        self._proc = None
        _LIVE.discard(self)

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no engine log)"
        return "\n".join(["--- engine log (tail) ---", *text[-lines:]])

    # ------------------------------------------------------------------ requests
    def _recv(self, timeout: float, what: str) -> dict[str, Any]:
        assert self._conn is not None, "engine is closed"
        if not self._conn.poll(max(timeout, 0.0)):
            raise EngineError(f"engine did not answer {what} within {timeout:.0f} s\n"
                              f"{self.log_tail()}")
        try:
            reply: dict[str, Any] = self._conn.recv()
        except EOFError:
            raise EngineError(f"engine worker died during {what}\n{self.log_tail()}") from None
        if not reply.get("ok"):
            raise EngineError(f"engine failed during {what}:\n{reply.get('error')}\n"
                              f"{self.log_tail()}")
        return reply

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int = 8, *,
                 top_logprobs_num: int = 0,
                 sampling_params: dict[str, Any] | None = None) -> list[Result]:
        """Greedy (temperature 0, ignore_eos) completions of token-id prompts, sent as one
        batch call to ``Engine.generate``."""
        assert self._conn is not None, "engine is closed"
        self._conn.send({"op": "generate", "prompts": [list(p) for p in prompts],
                         "max_new_tokens": max_new_tokens, "top_logprobs_num": top_logprobs_num,
                         "sampling_params": sampling_params or {}})
        reply = self._recv(REQUEST_TIMEOUT_S, "generate")
        return [Result(output_ids=r["output_ids"], output_logprobs=r["output_logprobs"],
                       cached_tokens=r["cached_tokens"], prompt_tokens=r["prompt_tokens"],
                       output_top_logprobs=r.get("output_top_logprobs"))
                for r in reply["results"]]


def group_processes(pgid: int) -> list[int]:
    """Live processes in a process group (for checking that nothing was left behind)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            pids.append(int(entry.name))
    return pids


_LIVE: set[EngineProcess] = set()


@atexit.register
def _close_all() -> None:
    for engine in list(_LIVE):
        engine.close()


@contextlib.contextmanager
def started(model_path: str | Path, **kwargs: Any) -> Iterator[EngineProcess]:
    engine = EngineProcess(model_path, **kwargs)
    try:
        yield engine
    finally:
        engine.close()
