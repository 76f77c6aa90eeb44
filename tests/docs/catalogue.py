"""What the doc runner must know about the docs: the few units it does not run (each with
its reason), the servers among the commands, the substitutions that put a fleet's addresses
and fixed ports on loopback and free ports (each doc says so next to its blocks), the
variables a reader sets, and the files a reader brings. Every entry must still match the
docs (tests/docs/test_catalogue.py), so none outlives the block it was written for."""

from __future__ import annotations

import json
import random
import secrets
from dataclasses import dataclass
from pathlib import Path

FREE_PORT = "{port}"
"""A substitution's replacement: a free loopback port, one per replaced text and run."""
FOLDER = "{folder}"
"""Stands for the run's temporary folder (also the commands' working directory)."""


@dataclass(frozen=True)
class Skip:
    doc: str
    start: str
    """The unit's first characters."""
    reason: str
    runs_in: str | None = None
    """The file that runs it instead; the doc must name it in the unit's section."""


@dataclass(frozen=True)
class Sub:
    doc: str
    old: str
    new: str


@dataclass(frozen=True)
class Server:
    start: str
    """A command starting with this (after ``NAME=value`` words) is a server: it runs in the
    background, ready once every ``--...port`` it names accepts a connection, until the
    doc's last unit has run; then it is stopped by its process group's id. Once ready, its
    listening sockets are read from /proc: each must be on an address the command named,
    not on every interface, but for the exceptions below (which the doc states)."""
    everywhere: tuple[str, ...] = ()
    """Port flags whose sockets listen on every interface whatever the command says."""
    own_ports_everywhere: bool = False
    """Whether sockets on ports it picks itself (named by no flag) listen everywhere."""


_INDEX = "a package index: `make test` installs the dev extras, which include this one"
_RAY = ("needs a Ray cluster: tests/sim/test_ray.py runs a sweep with --ray on a loopback "
        "Ray head it starts")
_VLLM = "needs vLLM in its own venv (`make engines-vllm`)"
_SGLANG = "needs SGLang in its 7 GB venv (`make engines-sglang`)"

SKIPS: tuple[Skip, ...] = (
    Skip("README.md", "make demo", "builds .venv with pip from a package index; what it "
         "runs, `radixkv verify`, runs below"),
    Skip("README.md", "make test", "this test runs inside `make test`"),
    Skip("README.md", "radixkv bench ops --components", "a benchmark of about a minute"),
    Skip("README.md", "radixkv bench ops --workload short", "a benchmark of minutes"),
    Skip("README.md", "make bench-peers", "builds a 6 GB SGLang venv from a package index"),
    Skip("README.md", "radixkv bench scale", "a benchmark of minutes (trees up to 1M nodes)"),
    Skip("README.md", "radixkv sim sweep --capacity 100K 1M --ray", _RAY),
    Skip("docs/events.md", "pip install 'radixkv[events]'", _INDEX),
    Skip("docs/events.md", "pip install ai-dynamo-runtime", _INDEX),
    Skip("docs/metrics.md", "pip install 'radixkv[metrics]'", _INDEX),
    Skip("docs/engines.md", "pip install 'radixkv[sglang]'", "a package index: `make "
         "engines-sglang` installs SGLang and radixkv for `make test-engines`",
         "tests/engines/test_sglang_radixkv.py"),
    Skip("docs/engines.md", "python -m sglang.launch_server",
         f"{_SGLANG}: `make test-engines` launches it", "tests/engines/test_sglang_stress.py"),
    Skip("docs/engines.md", "RADIXKV_SGLANG_HOST_TOKENS=",
         f"{_SGLANG}: `make test-engines` runs it", "tests/engines/test_sglang_l3.py"),
    Skip("docs/engines.md", "make engines-sglang", "builds that venv from a package index "
         "(`make test-engines` does, first)", "tests/engines/cost.py"),
    Skip("docs/engines.md", "SGLANG_USE_CPU_ENGINE=1",
         f"{_SGLANG}: a measurement of minutes, made by hand", "tests/engines/cost.py"),
    Skip("docs/engines.md", "RADIXKV_SGLANG_EVENTS_ENDPOINT=",
         f"{_SGLANG}: `make test-engines` runs it", "tests/engines/test_sglang_cluster.py"),
    Skip("docs/engines.md", "vllm-router", f"{_SGLANG}: `make test-engines` runs it",
         "tests/engines/test_sglang_cluster.py"),
    Skip("docs/engines.md", "pip install 'radixkv[vllm]'", "a package index: `make "
         "engines-vllm` installs vLLM and radixkv for `make test-engines`",
         "tests/engines/vllm/test_vllm_connector.py"),
    Skip("docs/engines.md", "vllm serve MODEL --no-async-scheduling --kv-transfer-config",
         f"{_VLLM}: `make test-engines` starts engines with it",
         "tests/engines/vllm/test_vllm_connector.py"),
    Skip("docs/engines.md", "vllm serve MODEL --no-async-scheduling --no-enable-prefix",
         f"{_VLLM}: `make test-engines` runs it", "tests/engines/vllm/test_vllm_l3.py"),
    Skip("docs/engines.md", "make engines-vllm", "builds that venv from a package index "
         "(`make test-engines` does, first)", "tests/engines/vllm/cost.py"),
    Skip("docs/engines.md", "VLLM_ENABLE_V1_MULTIPROCESSING=0",
         f"{_VLLM}: a measurement of minutes, made by hand", "tests/engines/vllm/cost.py"),
)

SERVERS: tuple[Server, ...] = (
    Server("redis-server"),
    # Mooncake 0.3.13.post1 ignores --http_metadata_server_host, and a segment holder
    # listens everywhere on ports it picks itself (storage.md says both)
    Server("mooncake_master", everywhere=("--http_metadata_server_port",)),
    Server("mooncake_client", own_ports_everywhere=True),
    Server("python -m dynamo.indexer", everywhere=("--port",)),  # 1.6.1: no option (events.md)
)

_LOOPBACK = {"10.0.0.5": "127.0.0.1", "10.0.0.6": "127.0.0.1", "10.0.0.7": "127.0.0.1"}
_IPC = {f"tcp://*:{port}": f"ipc://{FOLDER}/{port}" for port in (5556, 5557, 5558)}

SUBS: tuple[Sub, ...] = (
    *(Sub("docs/storage.md", old, new) for old, new in _LOOPBACK.items()),
    *(Sub("docs/storage.md", port, FREE_PORT)
      for port in ("6379", "50051", "8080", "9003", "50052")),
    Sub("docs/storage.md", '"64 GB"', '"64 MB"'),
    *(Sub("docs/storage.md", old, new) for old, new in _IPC.items() if "5556" not in old),
    *(Sub("docs/events.md", old, new) for old, new in _IPC.items()),
    Sub("docs/events.md", "10.0.0.7:", "127.0.0.1:"),
    Sub("docs/events.md", "8090", FREE_PORT),
    Sub("docs/metrics.md", "tcp://*:5557", _IPC["tcp://*:5557"]),
    Sub("docs/metrics.md", "9400", FREE_PORT),
)

ENV: dict[str, str] = {
    "REDIS_PASSWORD": secrets.token_hex(16),  # storage.md: the fleet's Redis password
    "POD_IP": "10.0.0.7",  # events.md: Kubernetes' downward API gives it to a pod
    "MC_TCP_BIND_ADDRESS": "127.0.0.1",  # storage.md: the address Mooncake advertises
}

NEEDS: dict[str, str] = {"redis": "redis-server", "mooncake": "mooncake_master"}
"""A unit that names a store (any case) needs its server program."""


def _mooncake_trace(path: Path) -> None:
    """A small trace in Mooncake's hash_ids format: conversations whose turns extend the
    blocks of the turn before."""
    draw = random.Random(7)
    lines, block, stamp = [], 0, 0
    for _ in range(12):
        ids: list[int] = []
        for _turn in range(draw.randint(1, 4)):
            new = draw.randint(1, 3)
            ids, block = ids + list(range(block, block + new)), block + new
            stamp += draw.randint(50, 400)
            lines.append({"timestamp": stamp, "input_length": 512 * len(ids) - 7,
                          "output_length": draw.randint(8, 64), "hash_ids": ids})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


FILES = {
    ("README.md", "TRACE.jsonl"): _mooncake_trace,
    ("docs/simulator.md", "traces/mooncake_conversation_trace.jsonl"): _mooncake_trace,
}
"""Files a reader brings (a trace downloaded from Mooncake's repository): small stand-ins in
the same format, written at the path the command names."""
