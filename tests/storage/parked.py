"""A store that does not answer until the test says so, and a clock that runs only then.

:class:`ParkedStore` is a FileStorage whose raw calls, once :meth:`~ParkedStore.park` was
called, wait until :meth:`~ParkedStore.release`: a stall of no measured length (a safety
timeout only keeps a broken test from hanging its process). :class:`StallClock` is the
storage tier's clock: it advances one second a reading while the store is parked and
stands still otherwise, so a wait on a parked store gives up after exactly
``wait_timeout_s`` readings, and a wait on a store that answers never gives up, however
slow the machine.
"""

from __future__ import annotations

import threading
from pathlib import Path

from radixkv.storage import FileStorage, FileStorageConfig

SAFETY_S = 120.0
"""How long a parked call waits at most (real seconds): a test releases long before."""


class ParkedStore(FileStorage):
    """See the module docstring."""

    def __init__(self, root: Path) -> None:
        super().__init__(FileStorageConfig(root=root))
        self.root = root
        self._gate = threading.Event()
        self._gate.set()

    @property
    def parked(self) -> bool:
        return not self._gate.is_set()

    def park(self) -> None:
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    def _exists(self, keys: list[str]) -> list[bool]:
        self._gate.wait(SAFETY_S)
        return super()._exists(keys)

    def _read(self, keys: list[str], size: int) -> list[bytes | str | None]:
        self._gate.wait(SAFETY_S)
        return super()._read(keys, size)

    def _write(self, keys: list[str], blobs: list[bytes]) -> list[str | None]:
        self._gate.wait(SAFETY_S)
        return super()._write(keys, blobs)


class StallClock:
    """See the module docstring."""

    def __init__(self, store: ParkedStore) -> None:
        self.store = store
        self.now = 0.0

    def __call__(self) -> float:
        if self.store.parked:
            self.now += 1.0
        return self.now
