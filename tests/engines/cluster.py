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

The router's venv: `make engines-router`.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .harness import START_TIMEOUT_S
from .processes import Process, ProcessError, free_port, http_json
from .server import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
ROUTER_VENV = ROOT / ".venv-router"
ROUTER_BIN = ROUTER_VENV / "bin" / "vllm-router"
ROUTER_SKIP_REASON = f"needs vllm-router in {ROUTER_VENV.name}: `make engines-router`"

__all__ = ["ROUTER_BIN", "ROUTER_SKIP_REASON", "Router", "SGLangServer", "free_port",
           "generate"]


class SGLangServer(ServerProcess):
    """``python -m sglang.launch_server`` (this interpreter) on CPU with the radixkv backend
    and KV events on: ``--kv-events-config`` turns SGLang's ``enable_kv_cache_events`` on
    and ``RADIXKV_SGLANG_EVENTS_ENDPOINT`` makes the backend publish on radixkv's
    ``KVEventPublisher`` (vLLM's ZMQ wire) instead of handing its events to SGLang. SGLang's
    own publisher still starts (its ``"null"`` publisher cannot be chosen: SGLang 0.5.23
    passes it the config's fields and ``NullEventPublisher()`` takes none, a TypeError at
    start-up), so it gets a free loopback port of its own (bound, ``"bind": true``) and
    publishes nothing, the backend's ``take_events`` returning ``[]``. Keyword arguments
    are ServerArgs fields over ``harness.CPU_ENGINE_KWARGS``."""

    def __init__(self, model_path: str | Path, *, events_endpoint: str | None,
                 log_dir: str | Path, events_bind: bool | None = None,
                 env: dict[str, str] | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, label: str = "",
                 **server_args: Any) -> None:
        self.events_endpoint = events_endpoint
        full_env = dict(env or {})
        if events_endpoint is not None:
            full_env["RADIXKV_SGLANG_EVENTS_ENDPOINT"] = events_endpoint
        if events_bind is not None:
            full_env["RADIXKV_SGLANG_EVENTS_BIND"] = "1" if events_bind else "0"
        sglang_events = {"publisher": "zmq", "bind": True,
                         "endpoint": f"tcp://127.0.0.1:{free_port()}"}
        super().__init__(model_path, env=full_env, log_dir=log_dir,
                         start_timeout_s=start_timeout_s, label=label,
                         **{"radix_cache_backend": "radixkv",
                            "kv_events_config": sglang_events, **server_args})

    def generate(self, input_ids: Sequence[int], max_new_tokens: int = 1,
                 timeout: float = 300) -> dict[str, Any]:
        return generate(self.base_url, input_ids, max_new_tokens, timeout)


class Router(Process):
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
        self.startup_s = self.wait_ready(self.base_url + "/health", start_timeout_s,
                                         "/health answered 200")

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
        raise ProcessError(f"POST {base_url}/generate: {status} {str(body)[:2000]}")
    return body
