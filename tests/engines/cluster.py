"""Helpers of ``test_sglang_cluster.py``: SGLang HTTP servers publishing radixkv's KV events,
and ``vllm-router`` (PyPI, its own venv) routing over them with the ``kv_aware`` policy.

    with SGLangServer(model, events_endpoint="tcp://127.0.0.1:5601", events_bind=True,
                      log_dir=tmp, page_size=4) as a, \\
         Router([a, b], events={a.base_url: "tcp://127.0.0.1:5601", ...}) as router:
        router.generate(input_ids, max_new_tokens=1)

Every process runs in a session (process group) of its own and is killed by its group id at
the end (also at interpreter exit); every wait is bounded. Nothing here imports torch, sglang
or vllm_router: the servers and the router are other interpreters (``.venv-sglang``,
``.venv-router``) started as subprocesses; the servers run under this interpreter
(``sys.executable``, ``.venv-sglang`` in ``make test-engines``).

Building the router venv (no Makefile target yet)::

    python3 -m venv .venv-router
    .venv-router/bin/pip install -r bench/requirements-router.txt
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .harness import CPU_ENGINE_KWARGS, ENGINE_ENV, START_TIMEOUT_S

ROOT = Path(__file__).resolve().parents[2]
ROUTER_VENV = ROOT / ".venv-router"
ROUTER_BIN = ROUTER_VENV / "bin" / "vllm-router"
ROUTER_REQUIREMENTS = ROOT / "bench" / "requirements-router.txt"
ROUTER_SKIP_REASON = (
    f"needs vllm-router in {ROUTER_VENV.name}: `python3 -m venv .venv-router && "
    f".venv-router/bin/pip install -r bench/requirements-router.txt`"
)


class ClusterError(RuntimeError):
    pass


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def cli_args(server_args: dict[str, Any]) -> list[str]:
    """ServerArgs fields as ``sglang.launch_server`` flags (``True`` -> bare flag,
    ``False``/``None`` -> omitted, a dict -> JSON)."""
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


def http_json(url: str, payload: dict[str, Any] | None = None, timeout: float = 300
              ) -> tuple[int | None, Any]:
    """GET (``payload`` None) or POST JSON: (status or None when nothing answered, body)."""
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            status, body = int(reply.status), reply.read()
    except urllib.error.HTTPError as err:
        status, body = int(err.code), err.read()
    except (OSError, ValueError) as err:
        return None, repr(err)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode(errors="replace")


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _Process:
    """A subprocess in a session of its own, its output in a log file that outlives it."""

    name = "process"

    def __init__(self, command: list[str], env: dict[str, str], log_path: Path,
                 cwd: str) -> None:
        self.command = command
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "wb") as log:
            log.write(("$ " + " ".join(command) + "\n").encode())
            log.flush()
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, cwd=cwd, start_new_session=True)
        _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        """SIGTERM to the leader, a short grace period, then SIGKILL to its process group."""
        proc = self.proc
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=15)
            _kill_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            self.proc = None
        _LIVE.discard(self)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        text = self.log_text().splitlines()
        return "\n".join([f"--- {self.name} log (tail of {self.log_path}) ---",
                          *text[-lines:]])

    def wait_ready(self, url: str, timeout_s: float, what: str) -> float:
        """Poll ``GET url`` until 200; the seconds it took."""
        t0 = time.monotonic()
        while True:
            if not self.alive():
                code = None if self.proc is None else self.proc.returncode
                raise ClusterError(f"{self.name} exited ({code}) before {what}\n"
                                   f"{self.log_tail()}")
            status, _ = http_json(url, timeout=5)
            if status == 200:
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout_s:
                raise ClusterError(f"{self.name}: {what} not within {timeout_s:.0f} s\n"
                                   f"{self.log_tail()}")
            time.sleep(1.0)


class SGLangServer(_Process):
    """``python -m sglang.launch_server`` (this interpreter) on CPU with the radixkv backend
    and KV events on: ``--kv-events-config`` turns SGLang's ``enable_kv_cache_events`` on
    and ``RADIXKV_SGLANG_EVENTS_ENDPOINT`` makes the backend publish on radixkv's
    ``KVEventPublisher`` (vLLM's ZMQ wire) instead of handing its events to SGLang. SGLang's
    own publisher still starts (its ``"null"`` publisher cannot be chosen: SGLang 0.5.23
    passes it the config's fields and ``NullEventPublisher()`` takes none, a TypeError at
    start-up), so it gets a free loopback port of its own (bound, ``"bind": true``) and
    publishes nothing, the backend's ``take_events`` returning ``[]``. Keyword arguments
    are ServerArgs fields over ``harness.CPU_ENGINE_KWARGS``."""

    name = "sglang server"

    def __init__(self, model_path: str | Path, *, events_endpoint: str | None,
                 log_dir: str | Path, events_bind: bool | None = None,
                 env: dict[str, str] | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, label: str = "",
                 **server_args: Any) -> None:
        self.host = "127.0.0.1"
        self.port = free_port(self.host)
        self.base_url = f"http://{self.host}:{self.port}"
        self.events_endpoint = events_endpoint
        self.name = f"sglang server {label or self.port}"
        self._tmp = tempfile.TemporaryDirectory(prefix="sglang-server-")
        sglang_events = {"publisher": "zmq", "bind": True,
                         "endpoint": f"tcp://{self.host}:{free_port(self.host)}"}
        kwargs = {**CPU_ENGINE_KWARGS, "radix_cache_backend": "radixkv",
                  "kv_events_config": sglang_events, **server_args,
                  "model_path": str(model_path), "host": self.host, "port": self.port}
        command = [sys.executable, "-m", "sglang.launch_server", *cli_args(kwargs)]
        full_env = {**os.environ, **ENGINE_ENV, **(env or {})}
        if events_endpoint is not None:
            full_env["RADIXKV_SGLANG_EVENTS_ENDPOINT"] = events_endpoint
        if events_bind is not None:
            full_env["RADIXKV_SGLANG_EVENTS_BIND"] = "1" if events_bind else "0"
        log = Path(log_dir) / f"sglang-{label or self.port}-{secrets.token_hex(2)}.log"
        super().__init__(command, full_env, log, self._tmp.name)
        try:
            self.startup_s = self.wait_ready(self.base_url + "/health", start_timeout_s,
                                             "/health answered 200")
        except BaseException:
            self.close()
            raise

    def generate(self, input_ids: Sequence[int], max_new_tokens: int = 1,
                 timeout: float = 300) -> dict[str, Any]:
        return generate(self.base_url, input_ids, max_new_tokens, timeout)


class Router(_Process):
    """``vllm-router`` (``.venv-router``) with the ``kv_aware`` policy over ``workers``;
    ``events`` maps each worker's URL to the ZMQ endpoint its KV event source connects to."""

    name = "vllm-router"

    def __init__(self, worker_urls: Sequence[str], events: dict[str, str], *,
                 log_dir: str | Path, block_size: int, model: str = "tiny-llama",
                 start_timeout_s: float = 120, extra_args: Sequence[str] = ()) -> None:
        self.host = "127.0.0.1"
        self.port = free_port(self.host)
        self.metrics_port = free_port(self.host)
        self.base_url = f"http://{self.host}:{self.port}"
        self._tmp = tempfile.TemporaryDirectory(prefix="vllm-router-")
        command = [str(ROUTER_BIN), "--host", self.host, "--port", str(self.port),
                   "--worker-urls", *worker_urls, "--policy", "kv_aware",
                   "--kv-event-block-size", str(block_size), "--kv-event-model", model,
                   "--log-level", "debug", "--worker-startup-check-interval", "1",
                   "--worker-startup-timeout-secs", str(int(start_timeout_s)),
                   "--prometheus-host", self.host,
                   "--prometheus-port", str(self.metrics_port), *extra_args]
        for url in worker_urls:
            command += ["--kv-event-source", f"{url}={events[url]}"]
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "debug")}
        log = Path(log_dir) / f"vllm-router-{secrets.token_hex(2)}.log"
        super().__init__(command, env, log, self._tmp.name)
        try:
            self.startup_s = self.wait_ready(self.base_url + "/health", start_timeout_s,
                                             "/health answered 200")
        except BaseException:
            self.close()
            raise

    def generate(self, input_ids: Sequence[int], max_new_tokens: int = 1,
                 timeout: float = 300) -> dict[str, Any]:
        return generate(self.base_url, input_ids, max_new_tokens, timeout)

    def metrics(self) -> str:
        status, body = http_json(f"http://{self.host}:{self.metrics_port}/metrics", timeout=10)
        return body if status == 200 and isinstance(body, str) else ""

    def clean_log(self, since: int = 0) -> str:
        """The router's log from character offset ``since``, ANSI colours stripped (it
        colours its fields even into a file)."""
        return _ANSI.sub("", self.log_text()[since:])

    def decisions(self, since: int = 0) -> list[str]:
        """The router's ``KV prefix decision`` log lines from offset ``since``."""
        return [line for line in self.clean_log(since).splitlines()
                if "KV prefix decision" in line]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def generate(base_url: str, input_ids: Sequence[int], max_new_tokens: int = 1,
             timeout: float = 300) -> dict[str, Any]:
    """SGLang's native ``POST /generate`` with token ids, greedy; the reply's JSON."""
    payload = {"input_ids": list(input_ids),
               "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0.0}}
    status, body = http_json(base_url + "/generate", payload, timeout=timeout)
    if status != 200 or not isinstance(body, dict):
        raise ClusterError(f"POST {base_url}/generate: {status} {str(body)[:2000]}")
    return body


_LIVE: set[_Process] = set()


@atexit.register
def _close_all() -> None:
    for process in list(_LIVE):
        process.close()
