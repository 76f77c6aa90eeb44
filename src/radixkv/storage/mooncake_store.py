"""MooncakeStorage: pages in a Mooncake Store cluster (``mooncake_master`` plus clients that
contribute memory segments), through the ``mooncake-transfer-engine`` client.

This backend is a pure client (it contributes no segment by default): the pages live in the
segments of standalone ``mooncake_client`` processes, so they outlive every engine that wrote
them. Objects move through one registered staging buffer, so a call needs no allocation per
page; a batch larger than the buffer goes in several round trips.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError
from .backend import StorageBackend, StorageFault
from .checks import check_clock

OBJECT_NOT_FOUND = -704
OBJECT_ALREADY_EXISTS = -705
NO_AVAILABLE_HANDLE = -200
RPC_FAIL = -900
RPC_TIMEOUT = -901
LEASE_EXPIRED = -707
INVALID_PARAMS = -600
_ABSENT = frozenset({OBJECT_NOT_FOUND, -703, -710, -712})
"""Codes that mean the store does not (or no longer) hold an object."""


@dataclass(frozen=True)
class MooncakeStorageConfig:
    """``master_address`` (``host:port`` of ``mooncake_master``), ``metadata_server`` (its
    HTTP metadata endpoint, or ``"P2PHANDSHAKE"``), this client's ``local_hostname``,
    ``protocol`` (``"tcp"`` or ``"rdma"`` with ``device_name``), ``global_segment_size``
    (bytes this process contributes; 0 = pure client), ``local_buffer_size`` and
    ``staging_bytes`` (the registered buffer every object passes through; at least one
    page). ``retry_after_s`` and ``clock``: see :class:`StorageBackend`; after an
    ``unavailable`` fault each call first checks the master accepts a TCP connection within
    ``probe_timeout_s``."""

    master_address: str = "127.0.0.1:50051"
    metadata_server: str = "http://127.0.0.1:8080/metadata"
    local_hostname: str = "127.0.0.1"
    protocol: str = "tcp"
    device_name: str = ""
    global_segment_size: int = 0
    local_buffer_size: int = 64 << 20
    staging_bytes: int = 32 << 20
    retry_after_s: float = 1.0
    probe_timeout_s: float = 1.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.staging_bytes <= 0 or self.local_buffer_size < 0 or self.global_segment_size < 0:
            raise ConfigError("MooncakeStorageConfig sizes must be positive")
        check_clock("MooncakeStorageConfig.clock", self.clock)


class MooncakeStorage(StorageBackend):
    """Pages in Mooncake Store; see :class:`StorageBackend` for the contract. A master that
    is down at start (or later) costs faults; the client connects on the next call after
    ``retry_after_s``."""

    def __init__(self, config: MooncakeStorageConfig) -> None:
        super().__init__(config.retry_after_s, config.clock)
        self._config = config
        self._staging = np.zeros(config.staging_bytes, dtype=np.uint8)
        self._base = int(self._staging.ctypes.data)
        self._store: Any = None
        self._suspect = False
        self._guarded(lambda _keys: self._connected(), [], None, lambda _answer, _count: True)

    def _connected(self) -> Any:
        if self._suspect:
            self._probe()
        if self._store is not None:
            return self._store
        self._probe()  # the client's own set-up retries a dead master for 90 s
        from mooncake.store import MooncakeDistributedStore  # the `storage` extra

        store = MooncakeDistributedStore()
        cfg = self._config
        code = store.setup(cfg.local_hostname, cfg.metadata_server, cfg.global_segment_size,
                           cfg.local_buffer_size, cfg.protocol, cfg.device_name,
                           cfg.master_address)
        if code != 0:
            store.close()
            raise StorageFault("unavailable", f"mooncake setup answered {code}")
        if store.register_buffer(self._base, self._staging.nbytes) != 0:
            store.close()
            raise StorageFault("error", "mooncake refused to register the staging buffer")
        self._store = store
        return store

    def _on_down(self) -> None:
        self._suspect = True

    def _probe(self) -> None:
        """Fail fast while the master refuses connections: a call to a dead master costs the
        client seconds of retries, a refused TCP connect costs nothing."""
        host, _colon, port = self._config.master_address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=self._config.probe_timeout_s
                                     ).close()
        except OSError as error:
            self._suspect = True
            raise StorageFault("unavailable", f"mooncake master: {error}") from error
        self._suspect = False

    def _exists(self, keys: list[str]) -> list[bool]:
        codes = self._connected().batch_is_exist(keys)
        _raise_if_down(codes)
        return [code == 1 for code in codes]

    def _read(self, keys: list[str], size: int) -> list[bytes | str | None]:
        # the client fails all but one copy of a key repeated in a batch: ask each key once
        unique = list(dict.fromkeys(keys))
        found: dict[str, bytes | str | None] = {}
        for group in self._groups(unique, [size] * len(unique)):
            codes = self._get_group(group)
            for (key, offset, _bound), code in zip(group, codes):
                found[key] = (self._staging[offset : offset + code].tobytes() if code > 0
                              else _read_fault(code))
        return [found[key] for key in keys]

    def _get_group(self, group: list[tuple[str, int, int]]) -> list[int]:
        codes: list[int] = self._connected().batch_get_into(*self._arguments(group))
        _raise_if_down(codes)
        late = [index for index, code in enumerate(codes) if code == LEASE_EXPIRED]
        if late:  # the read outlived the lease its query took: ask once more
            again = self._connected().batch_get_into(*self._arguments([group[i] for i in late]))
            for index, code in zip(late, again):
                codes[index] = code
        return codes

    def _write(self, keys: list[str], blobs: list[bytes]) -> list[str | None]:
        first = dict(zip(reversed(keys), reversed(blobs)))  # a repeated key: its first object
        unique = list(dict.fromkeys(keys))
        outcome: dict[str, str | None] = {}
        for group in self._groups(unique, [len(first[key]) for key in unique]):
            for key, offset, length in group:
                self._staging[offset : offset + length] = np.frombuffer(first[key], np.uint8)
            codes = self._connected().batch_put_from(*self._arguments(group))
            _raise_if_down(codes)
            outcome.update((key, _put_fault(code)) for (key, _o, _l), code in zip(group, codes))
        return [outcome[key] for key in keys]

    def _groups(self, keys: list[str], sizes: list[int]) -> list[list[tuple[str, int, int]]]:
        """Keys packed in order into loads of the staging buffer: (key, offset, size)."""
        groups: list[list[tuple[str, int, int]]] = [[]]
        used = 0
        for key, size in zip(keys, sizes):
            if size > self._staging.nbytes:
                raise StorageFault("error", f"an object of {size} bytes exceeds staging_bytes")
            if used + size > self._staging.nbytes:
                groups.append([])
                used = 0
            groups[-1].append((key, used, size))
            used += size
        return [group for group in groups if group]

    def _arguments(self, group: list[tuple[str, int, int]]) -> tuple[list[str], list[int],
                                                                     list[int]]:
        return ([key for key, _offset, _size in group],
                [self._base + offset for _key, offset, _size in group],
                [size for _key, _offset, size in group])

    def _remove(self, keys: list[str]) -> None:
        # forced: a lease a recent read took (ours, when purging a bad object) would block
        # it; a reader the removal overtakes gets a torn or missing object, i.e. a miss
        _raise_if_down(self._connected().batch_remove(keys, force=True))

    def _clear(self) -> None:
        if self._connected().remove_all() < 0:
            raise StorageFault("unavailable", "mooncake remove_all failed")

    def _classify(self, error: Exception) -> str:
        return "error"

    def close(self) -> None:
        if self._store is not None:
            self._store.unregister_buffer(self._base)
            self._store.close()
            self._store = None


def _raise_if_down(codes: list[int]) -> None:
    """Raise when no key got an answer: the master is down (or stalled past its timeout)."""
    if codes and all(code in (RPC_FAIL, RPC_TIMEOUT) for code in codes):
        kind = "timeout" if RPC_TIMEOUT in codes else "unavailable"
        raise StorageFault(kind, "the mooncake master did not answer")


def _read_fault(code: int) -> str | None:
    if code in _ABSENT:
        return None
    # the client's answer for an object larger than a page of this layout: not our page
    return "corrupt" if code == INVALID_PARAMS else "error"


def _put_fault(code: int) -> str | None:
    if code in (0, OBJECT_ALREADY_EXISTS):  # a key names its bytes: an equal object is there
        return None
    if code == NO_AVAILABLE_HANDLE:
        return "full"
    return {RPC_FAIL: "unavailable", RPC_TIMEOUT: "timeout"}.get(code, "error")
