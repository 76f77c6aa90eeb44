"""A Ray head of the test session's own: ``ray start --head --block`` on loopback, a free
port, two CPUs, no dashboard, in a temporary folder, stopped by its PID and its session.

``ray stop`` would end every Ray process of this machine, other users' too. Here the head
is started in a session of its own, so everything it spawns (the GCS, the raylet, their
agents and the worker processes, which the raylet puts in process groups of their own) has
that session's id; stopping signals the head's process group, then kills by PID whatever
process of the session is left."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import radixkv

LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
"""Ray on Linux replaces 127.0.0.1 by the machine's routable address, for the head and the
driver alike, unless it runs as it does on a laptop (the first setting). Ray reads it when
imported: the driver's process needs it before ``import ray``."""

STARTED = "Ray runtime started"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class RayHead:
    """Start with :meth:`start` (returns why it could not, or ``None``); :meth:`stop` ends
    every process it started."""

    def __init__(self) -> None:
        # short: Ray's unix sockets live under it, and a socket's path has a small limit
        self.folder = Path(tempfile.mkdtemp(prefix="rkray-", dir="/tmp"))
        self.address = f"127.0.0.1:{free_port()}"
        self.log = self.folder / "head.log"
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self, wait: float = 180.0) -> str | None:
        program = Path(sys.executable).parent / "ray"
        if not program.exists():
            return f"{program} is missing (pip install 'radixkv[ray]')"
        source = str(Path(radixkv.__file__).parents[1])  # the workers import this radixkv
        env = {**os.environ, **LOOPBACK,
               "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
        argv = [str(program), "start", "--head", "--block", "--port", self.address.split(":")[1],
                "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats",
                "--object-store-memory", str(100 << 20), "--temp-dir", str(self.folder)]
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                          start_new_session=True)
        deadline = time.monotonic() + wait
        while STARTED not in self.log.read_text(errors="replace"):
            if self.popen.poll() is not None or time.monotonic() > deadline:
                return f"ray start --head did not come up: {self._tail()}"
            time.sleep(0.2)
        return None

    def _tail(self) -> str:
        return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-3:])

    def stop(self) -> None:
        if self.popen is not None:
            session = self.popen.pid  # a new session's id is its leader's PID
            _signal_group(session, signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _signal_group(session, signal.SIGKILL)
                self.popen.wait()
            for pid in session_members(session):
                _kill(pid)
        shutil.rmtree(self.folder, ignore_errors=True)


def session_members(session: int) -> list[int]:
    """The live processes of a session (zombies are dead already), from /proc (none where
    there is no /proc: the process group was all there was to signal)."""
    members: list[int] = []
    proc = Path("/proc")
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if fields[0] != "Z" and int(fields[3]) == session:
            members.append(int(entry.name))
    return members


def _signal_group(group: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, number)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
