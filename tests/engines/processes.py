"""Processes the engine tests start (SGLang HTTP servers, vllm-router): each in a session
(process group) of its own, its output in a log file that outlives it, every wait bounded,
and the whole group killed by its id on close (also at interpreter exit), so nothing a server
starts outlives its handle. Imports neither torch nor sglang."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any


class ProcessError(RuntimeError):
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


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class Process:
    """A subprocess in a session of its own, its output in ``log_path``."""

    name = "process"
    grace_s = 20.0  # after SIGTERM, before the group is killed

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
        """The leader's pid, which is also the process group's id."""
        return None if self.proc is None else self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        """SIGTERM to the leader, a grace period, then SIGKILL to its process group."""
        proc = self.proc
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=self.grace_s)
            kill_group(proc.pid)
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

    def log_tail(self, lines: int = 80) -> str:
        text = self.log_text().splitlines()
        if not text:
            return f"(no {self.name} log)"
        return "\n".join([f"--- {self.name} log (tail of {self.log_path}) ---",
                          *text[-lines:]])

    def wait_ready(self, url: str, timeout_s: float, what: str) -> float:
        """Poll ``GET url`` until it answers 200; the seconds it took. Raises
        :class:`ProcessError` with the log's tail when the process exits first or
        ``timeout_s`` runs out (the process is closed then)."""
        t0 = time.monotonic()
        try:
            while True:
                if not self.alive():
                    code = None if self.proc is None else self.proc.returncode
                    raise ProcessError(f"{self.name} exited ({code}) before {what}\n"
                                       f"{self.log_tail()}")
                if http_json(url, timeout=5)[0] == 200:
                    return time.monotonic() - t0
                if time.monotonic() - t0 > timeout_s:
                    raise ProcessError(f"{self.name}: {what} not within {timeout_s:.0f} s\n"
                                       f"{self.log_tail()}")
                time.sleep(1.0)
        except BaseException:
            self.close()
            raise


_LIVE: set[Process] = set()


@atexit.register
def _close_all() -> None:
    for process in list(_LIVE):
        process.close()


def connect_worker(proc: subprocess.Popen[bytes], address: str, authkey: bytes,
                   deadline: float) -> Connection | None:
    """A connection to an engine worker's unix socket once it listens, or ``None`` when the
    worker exited or ``deadline`` (``time.monotonic()``) passed first. The socket file
    appears at bind, before the worker listens, so a refused connection is tried again."""
    while proc.poll() is None and time.monotonic() < deadline:
        if os.path.exists(address):
            try:
                return Client(address, family="AF_UNIX", authkey=authkey)
            except (ConnectionRefusedError, FileNotFoundError):
                pass
        time.sleep(0.05)
    return None


def close_worker(proc: subprocess.Popen[bytes] | None, conn: Connection | None) -> None:
    """Ask an engine worker to shut down (a minute to answer), then kill its process group."""
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.send({"op": "shutdown"})
            if conn.poll(60):
                conn.recv()
        with contextlib.suppress(Exception):
            conn.close()
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        kill_group(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
