"""Start and drive benchmark workers (:mod:`radixkv.bench.peers.worker`) as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import radixkv

from ..runner import WorkloadSizes

SRC = Path(radixkv.__file__).resolve().parent.parent
PEERS_VENV = ".venv-peers"


class WorkerError(RuntimeError):
    """A worker failed; the message carries the tail of its stderr."""


def find_peers_python(explicit: str | None = None) -> Path:
    """The ``.venv-peers`` interpreter: ``explicit``, else under the current directory, else
    next to the source tree radixkv runs from."""
    candidates = [Path(explicit)] if explicit else [
        Path.cwd() / PEERS_VENV / "bin" / "python", SRC.parent / PEERS_VENV / "bin" / "python"]
    for path in candidates:
        if path.exists():
            return path
    raise FileNotFoundError(
        f"no SGLang peers interpreter at {', '.join(map(str, candidates))}: run `make "
        "bench-peers` in the repository (or pass --peers-python)")


def worker_command(tree: str, sizes: WorkloadSizes, verify: bool, peers_python: Path | None
                   ) -> tuple[list[str], dict[str, str]]:
    """Command line and environment of a worker for ``tree``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")
    python = sys.executable
    if tree.startswith("sglang-"):
        if peers_python is None:
            raise ValueError("an SGLang worker needs the peers interpreter")
        python = str(peers_python)
        env["SGLANG_USE_CPU_ENGINE"] = "1"
        env["SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND"] = tree.removeprefix("sglang-")
        env.setdefault("PYTHONWARNINGS", "ignore")
    argv = [python, "-m", "radixkv.bench.peers.worker", "--tree", tree, *sizes.argv()]
    if verify:
        argv.append("--verify")
    return argv, env


class Worker:
    """One tree under test in its own process, kept for every round of a run."""

    def __init__(self, tree: str, sizes: WorkloadSizes, verify: bool,
                 peers_python: Path | None = None) -> None:
        self.tree = tree
        argv, env = worker_command(tree, sizes, verify, peers_python)
        self.log: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.hello = self._read()
        if self.hello.get("type") != "hello":
            raise self._error(f"unexpected first line {self.hello}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise self._error("worker exited")
        message: dict[str, Any] = json.loads(line)
        return message

    def _error(self, what: str) -> WorkerError:
        self.proc.poll()
        self.log.seek(0)
        tail = "".join(self.log.readlines()[-25:])
        return WorkerError(f"{self.tree} worker: {what} (exit {self.proc.returncode})\n{tail}")

    def run(self, workload: str, components: str, page_size: int, ops: tuple[str, ...]
            ) -> Iterator[dict[str, Any]]:
        """Run ``ops`` of ``workload`` on fresh caches of this shape; yield one record per
        operation."""
        assert self.proc.stdin is not None
        command = {"workload": workload, "components": components, "page_size": page_size,
                   "ops": list(ops)}
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        while True:
            message = self._read()
            kind = message.pop("type")
            if kind == "done":
                return
            if kind == "error":
                raise self._error(message["error"])
            yield message

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
