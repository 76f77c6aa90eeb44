"""A stalled store for the wait tests, with no wall-clock dependence.

:class:`StalledServer` is a unix socket that listens and never accepts: the kernel takes a
client's connections into the backlog and buffers what it sends, but nothing ever answers,
which is what a stopped or hung redis-server looks like to a client. Each try of a call
opens a connection of its own (redis-py drops a connection whose read timed out), so
:meth:`StalledServer.attempts` (the connections waiting in the backlog, taken and counted)
says how many times the client waited for its timeout: no measured duration involved.
:class:`ManualClock` is a backend's clock that moves only when a test says so.
"""

from __future__ import annotations

import socket
from pathlib import Path


class StalledServer:
    """See the module docstring. ``path``: the socket's path (a redis ``unix_socket``)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.bind(self.path)
        self._socket.listen(64)
        self._socket.setblocking(False)

    def attempts(self) -> int:
        """Connections made since the last call (each closed at once)."""
        count = 0
        while True:
            try:
                connection, _address = self._socket.accept()
            except BlockingIOError:
                return count
            connection.close()
            count += 1

    def close(self) -> None:
        self._socket.close()


class ManualClock:
    """A clock (seconds) that stands still until :meth:`advance`."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
