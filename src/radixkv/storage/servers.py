"""Stores started on this machine, for the tests and ``radixkv bench storage``: a
redis-server on a unix socket, a Mooncake cluster (``mooncake_master`` with its HTTP metadata
server, plus a standalone ``mooncake_client`` holding the segment, so pages outlive the
engines) on free loopback ports. Every process is started here and stopped by its PID; a
server whose program is missing is reported by :func:`missing`. Nothing here is needed to
use a store someone else runs."""

from __future__ import annotations

import ctypes.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
LEASE_MS = 300
"""Mooncake's lease on an object after exists/get (ms): short, so a removal need not wait."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def wait_until(probe: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout} s")
        time.sleep(0.05)


def missing(program: str) -> str | None:
    """Why ``program`` cannot run here, or ``None`` when it can."""
    if program.startswith("mooncake"):
        if not (BIN / program).exists():
            return f"{program} is not installed (pip install 'radixkv[storage]')"
        if ctypes.util.find_library("ibverbs") is None:
            return "Mooncake needs libibverbs1 (apt-get install libibverbs1)"
        return None
    return None if shutil.which(program) else f"{program} is not installed (apt-get install)"


class Process:
    """One server process, its log in ``log``; stop() ends it by PID."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.argv, self.log = argv, log
        self.env = {**os.environ, **(env or {})}
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                          env=self.env)

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def signal(self, number: int) -> None:
        os.kill(self.pid, number)

    def stop(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGCONT)  # a paused one must wake to hear SIGTERM
        self.popen.terminate()
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=5)

    def kill(self) -> None:
        """SIGKILL by PID, as a crash would."""
        assert self.popen is not None
        self.popen.kill()
        self.popen.wait(timeout=5)


class RedisServer:
    """redis-server on a unix socket in ``folder``; no persistence."""

    def __init__(self, folder: Path, *settings: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.socket = str(folder / "redis.sock")
        self.process = Process(["redis-server", "--port", "0", "--unixsocket", self.socket,
                                "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                                "--dir", str(folder), *settings], folder / "redis.log")

    def start(self) -> RedisServer:
        self.process.start()
        wait_until(self._answers, 10, "redis-server")
        return self

    def _answers(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(0.5)
                sock.connect(self.socket)
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        self.process.stop()


class MooncakeCluster:
    """mooncake_master (RPC, HTTP metadata and metrics on free ports) and one standalone
    mooncake_client contributing ``segment`` of memory."""

    def __init__(self, folder: Path, segment: str = "64 MB", lease_ms: int = LEASE_MS) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.rpc, self.http, metrics, client = (free_port() for _ in range(4))
        self.master_address = f"127.0.0.1:{self.rpc}"
        self.metadata_server = f"http://127.0.0.1:{self.http}/metadata"
        self.master = Process([
            str(BIN / "mooncake_master"), f"--rpc_port={self.rpc}", "--rpc_address=127.0.0.1",
            "--enable_http_metadata_server=true", "--http_metadata_server_host=127.0.0.1",
            f"--http_metadata_server_port={self.http}", f"--metrics_port={metrics}",
            "--metrics_host=127.0.0.1",
            f"--default_kv_lease_ttl={lease_ms}", "--client_ttl=3"], folder / "master.log")
        self.segment = Process([
            str(BIN / "mooncake_client"), "--host=127.0.0.1", f"--port={client}",
            f"--master_server_address={self.master_address}",
            f"--metadata_server={self.metadata_server}", f"--global_segment_size={segment}",
            "--protocol=tcp"], folder / "client.log", {"MC_TCP_BIND_ADDRESS": "127.0.0.1"})

    def start(self) -> MooncakeCluster:
        self.start_master()
        self.segment.start()
        wait_until(lambda: b"Starting real client service" in self.segment.log.read_bytes(),
                   20, "mooncake_client")
        return self

    def start_master(self) -> None:
        self.master.start()
        wait_until(lambda: _listening(self.rpc) and _listening(self.http), 20, "mooncake_master")

    def stop(self) -> None:
        self.segment.stop()
        self.master.stop()


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
