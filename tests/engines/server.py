"""Start SGLang's real HTTP server (``python -m sglang.launch_server``) on CPU and stop it.

    with ServerProcess(model_path, log_dir=tmp, radix_cache_backend="radixkv",
                       chunked_prefill_size=128, env={"SGLANG_TEST_RETRACT": "1"}) as server:
        requests.post(server.base_url + "/generate", json={...})

For tests that drive SGLang over HTTP, as SGLang's own server tests do (its ``test/kits``
take a ``base_url``); ``harness.EngineProcess`` is the in-process ``sglang.Engine`` for the
others. Keyword arguments are ServerArgs fields, merged over ``harness.CPU_ENGINE_KWARGS``
and turned into command-line flags (``chunked_prefill_size=128`` -> ``--chunked-prefill-size
128``, ``True`` -> the bare flag, ``False``/``None`` -> omitted); the port is a free one
chosen here. The server runs in a session (process group) of its own with
``harness.ENGINE_ENV`` (``SGLANG_USE_CPU_ENGINE=1``) plus ``env``; stdout and stderr go to a
log file that outlives the server (``log_path``, ``log_text()``, ``log_tail()``). Start-up
waits for ``/health`` to answer 200, bounded by ``START_TIMEOUT_S``; ``close()`` sends
SIGTERM to the launcher, then kills the whole process group by its id (the launcher's pid),
so no scheduler or detokenizer process outlives the handle, also at interpreter exit.

Like ``harness.py``, this module imports neither torch nor sglang.
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

from .harness import CPU_ENGINE_KWARGS, ENGINE_ENV, START_TIMEOUT_S
from .processes import Process, cli_args, free_port, http_json


class ServerProcess(Process):
    """``python -m sglang.launch_server`` on the CPU, on 127.0.0.1 and a free port."""

    name = "sglang server"

    def __init__(self, model_path: str | Path, *, env: dict[str, str] | None = None,
                 log_dir: str | Path | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, label: str = "",
                 **server_args: Any) -> None:
        self.host = "127.0.0.1"
        self.port = free_port(self.host)
        self.base_url = f"http://{self.host}:{self.port}"
        self.name = f"sglang server {label or self.port}"
        self._tmp = tempfile.TemporaryDirectory(prefix="server-")
        log = Path(log_dir or self._tmp.name) / f"server-{label}{secrets.token_hex(3)}.log"
        kwargs = {**CPU_ENGINE_KWARGS, **server_args, "model_path": str(model_path),
                  "host": self.host, "port": self.port}
        command = [sys.executable, "-m", "sglang.launch_server", *cli_args(kwargs)]
        super().__init__(command, {**os.environ, **ENGINE_ENV, **(env or {})}, log,
                         self._tmp.name)
        self.startup_s = self.wait_ready(self.base_url + "/health", start_timeout_s,
                                         "/health answered 200")

    def get(self, path: str, timeout: float = 30) -> int | None:
        """The status of ``GET path``, or None when nothing answered."""
        return http_json(self.base_url + path, timeout=timeout)[0]

    def post(self, path: str, payload: dict[str, Any], timeout: float = 300
             ) -> tuple[int | None, Any]:
        """``POST path`` with a JSON body: (status, decoded JSON or text)."""
        return http_json(self.base_url + path, payload, timeout=timeout)
