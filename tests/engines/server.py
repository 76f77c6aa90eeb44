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

import atexit
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .harness import CPU_ENGINE_KWARGS, ENGINE_ENV, START_TIMEOUT_S, _kill_group


class ServerError(RuntimeError):
    pass


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def cli_args(server_args: dict[str, Any]) -> list[str]:
    """ServerArgs fields as ``sglang.launch_server`` flags."""
    args: list[str] = []
    for name, value in server_args.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, dict):
            args += [flag, json.dumps(value)]
        else:
            args += [flag, str(value)]
    return args


class ServerProcess:
    """``python -m sglang.launch_server`` on the CPU, on 127.0.0.1 and a free port."""

    def __init__(self, model_path: str | Path, *, env: dict[str, str] | None = None,
                 log_dir: str | Path | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, **server_args: Any) -> None:
        self.host = "127.0.0.1"
        self.port = free_port(self.host)
        self.base_url = f"http://{self.host}:{self.port}"
        self._tmp = tempfile.TemporaryDirectory(prefix="server-")
        self.log_path = Path(log_dir or self._tmp.name) / f"server-{secrets.token_hex(3)}.log"
        kwargs = {**CPU_ENGINE_KWARGS, **server_args, "model_path": str(model_path),
                  "host": self.host, "port": self.port}
        self.command = [sys.executable, "-m", "sglang.launch_server", *cli_args(kwargs)]
        self.env = {**os.environ, **ENGINE_ENV, **(env or {})}
        self._proc: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None
        self._start(start_timeout_s)

    # ------------------------------------------------------------------ life cycle
    def _start(self, timeout_s: float) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            log.write(("$ " + " ".join(self.command) + "\n").encode())
            log.flush()
            t0 = time.monotonic()
            self._proc = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=self.env, cwd=self._tmp.name,
                start_new_session=True,
            )
        _LIVE.add(self)
        try:
            while True:
                if self._proc.poll() is not None:
                    raise ServerError(f"server exited ({self._proc.returncode}) before "
                                      f"/health answered\n{self.log_tail()}")
                if self.get("/health", timeout=5) == 200:
                    break
                if time.monotonic() - t0 > timeout_s:
                    raise ServerError(f"server's /health did not answer 200 within "
                                      f"{timeout_s:.0f} s\n{self.log_tail()}")
                time.sleep(1.0)
            self.startup_s = time.monotonic() - t0
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """SIGTERM to the launcher, a short grace period, then SIGKILL to its process group."""
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=20)
            _kill_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            self._proc = None
        _LIVE.discard(self)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    @property
    def pid(self) -> int | None:
        """The launcher's pid, which is also the process group's id."""
        return None if self._proc is None else self._proc.pid

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ------------------------------------------------------------------ HTTP
    def get(self, path: str, timeout: float = 30) -> int | None:
        """The status of ``GET path``, or None when nothing answered."""
        try:
            with urllib.request.urlopen(self.base_url + path, timeout=timeout) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as err:
            return int(err.code)
        except (OSError, ValueError):
            return None

    def post(self, path: str, payload: dict[str, Any], timeout: float = 300
             ) -> tuple[int, Any]:
        """``POST path`` with a JSON body: (status, decoded JSON or text)."""
        request = urllib.request.Request(self.base_url + path, method="POST",
                                         data=json.dumps(payload).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                status, body = int(reply.status), reply.read()
        except urllib.error.HTTPError as err:
            status, body = int(err.code), err.read()
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body.decode(errors="replace")

    # ------------------------------------------------------------------ log
    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 80) -> str:
        text = self.log_text().splitlines()
        if not text:
            return "(no server log)"
        return "\n".join([f"--- server log (tail of {self.log_path}) ---", *text[-lines:]])


_LIVE: set[ServerProcess] = set()


@atexit.register
def _close_all() -> None:
    for server in list(_LIVE):
        server.close()
