"""Runs a document's units in order, as a reader would, in a temporary folder: a doctest
through ``python -m doctest``, a script through ``python``, a command through ``bash``, each
in a process group of its own that is killed once it has ended (nothing it started outlives
it). A server command runs in the background until the document's last unit has run.

Every run sees the checkout's ``src`` first on ``PYTHONPATH``, the interpreter's ``bin``
first on ``PATH`` (``radixkv``, ``python``, the Mooncake programs), the variables of
:data:`catalogue.ENV`, and each unit's text after the document's substitutions."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import listening
from .blocks import ROOT, Unit
from .catalogue import FOLDER, FREE_PORT, Server, Sub

UNIT_TIMEOUT_S = 900.0
"""Only a hang guard: no unit is meant to come near it."""
READY_TIMEOUT_S = 60.0
_PORT_FLAG = re.compile(r"(--[a-z_]*port)[= ]\"?(\d+)")


@dataclass(frozen=True)
class Outcome:
    ok: bool
    output: str


@dataclass
class Setting:
    """What a document's run needs from the catalogue."""

    subs: tuple[Sub, ...] = ()
    servers: tuple[Server, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, Callable[[Path], None]] = field(default_factory=dict)
    """Relative path -> what writes the stand-in file there."""


class DocRun:
    """One document's units, run in order on demand; :meth:`close` stops its servers."""

    def __init__(self, units: list[Unit], setting: Setting, folder: Path,
                 root: Path = ROOT) -> None:
        self.units, self.setting, self.folder = units, setting, folder
        (folder / "docs").mkdir(parents=True, exist_ok=True)  # for outputs named docs/...
        for relative, write in setting.files.items():
            write(folder / relative)
        self.values = {sub.old: self._value(sub.new) for sub in setting.subs}
        self.env = _environment(root, setting.env)
        self.done: dict[str, Outcome] = {}
        self.servers: list[subprocess.Popen[bytes]] = []

    def _value(self, new: str) -> str:
        return str(_free_port()) if new == FREE_PORT else new.replace(FOLDER, str(self.folder))

    def text(self, unit: Unit) -> str:
        text = unit.text
        for sub in self.setting.subs:
            text = text.replace(sub.old, self.values[sub.old])
        return text

    def outcome(self, unit: Unit, skipped: set[str]) -> Outcome:
        """Runs every unit before ``unit`` not run yet (but the ``skipped`` ones), then
        ``unit``; stops the servers once the last unit not skipped has run."""
        for earlier in self.units[: self.units.index(unit) + 1]:
            if earlier.name not in self.done and earlier.name not in skipped:
                self.done[earlier.name] = self._run(earlier)
        if all(u.name in self.done or u.name in skipped for u in self.units):
            self.close()
        return self.done[unit.name]

    def _run(self, unit: Unit) -> Outcome:
        text = self.text(unit)
        server = self._server(text) if unit.kind == "sh" else None
        if server is not None:
            return self._start(unit, text, server)
        return self._once(self._argv(unit, text))

    def _server(self, text: str) -> Server | None:
        command = re.sub(r"^(\s*[A-Za-z_][A-Za-z0-9_]*=\S+\s+)+", "", text)
        return next((s for s in self.setting.servers if command.startswith(s.start)), None)

    def _argv(self, unit: Unit, text: str) -> list[str]:
        if unit.kind == "sh":
            return ["bash", "-c", text]
        path = self.folder / f"unit-{unit.line}.{'txt' if unit.kind == 'doctest' else 'py'}"
        path.write_text(text, encoding="utf-8")
        if unit.kind == "doctest":
            return [sys.executable, "-m", "doctest", "-o", "ELLIPSIS", str(path)]
        return [sys.executable, str(path)]

    def _once(self, argv: list[str]) -> Outcome:
        # output to a file, not a pipe: a child left behind must not keep the run waiting
        log = self.folder / "unit.log"
        with log.open("wb") as out:
            process = subprocess.Popen(argv, cwd=self.folder, env=self.env, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout=UNIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            process.wait()
        _kill_group(process.pid)  # whatever it started and left behind
        output = log.read_text(errors="replace")
        return Outcome(process.returncode == 0, f"exit {process.returncode}\n{output}")

    def _start(self, unit: Unit, text: str, server: Server) -> Outcome:
        log = self.folder / f"server-{unit.line}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(["bash", "-c", text], cwd=self.folder, env=self.env,
                                       stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.servers.append(process)
        ports = {flag: int(port) for flag, port in _PORT_FLAG.findall(text)}
        problem = _wait_ready(process, list(ports.values()))
        found = listening.group_listeners(process.pid) if problem is None else []
        problem = problem or interface_problem(found, ports, server)
        report = problem or f"ready, listening on {found}"
        return Outcome(problem is None, f"{report}\n{log.read_text(errors='replace')}")

    def close(self) -> None:
        for process in self.servers:
            _kill_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _kill_group(process.pid)
                process.wait(timeout=10)
            _kill_group(process.pid)  # children that outlived the leader
        self.servers = []


def _environment(root: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root / "src"), env.get("PYTHONPATH"))
                                        if p)
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    return env


def _wait_ready(process: subprocess.Popen[bytes], ports: list[int]) -> str | None:
    if not ports:
        return "a server command that names no --...port: nothing tells when it is ready"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not all(_accepts(port) for port in ports):
        if process.poll() is not None:
            return f"the server exited ({process.returncode}) before it was ready"
        if time.monotonic() > deadline:
            return f"ports {ports} not all accepting after {READY_TIMEOUT_S} s"
        time.sleep(0.1)
    return None


def interface_problem(found: list[tuple[str, int]], ports: dict[str, int],
                      server: Server) -> str | None:
    """What is wrong with a server's listening sockets ``found``, given the ports its
    command names by flag; ``None`` when nothing is."""
    if not set(ports.values()) <= {port for _, port in found}:
        return f"ports {ports} are not all among the server's own listeners {found}"
    allowed = {ports[flag] for flag in server.everywhere if flag in ports}
    wildcard = [(address, port) for address, port in found if listening.is_wildcard(address)
                and port not in allowed
                and not (server.own_ports_everywhere and port not in ports.values())]
    return f"listens on every interface: {wildcard} (of {found})" if wildcard else None


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _kill_group(group: int, number: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(group, number)
