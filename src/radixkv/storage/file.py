"""FileStorage: one file per page and component under a directory (local disk or a shared
mount), standard library only.

A page is written to a temporary file and renamed into place, so a reader sees the whole
object or none. With a size cap, a put that takes the directory past it deletes the least
recently used files (reads refresh a file's mtime) down to 90% of the cap.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.tree_config import normalise_ints
from ..errors import ConfigError, ConfigTypeError
from .backend import StorageBackend
from .checks import check_bool, check_clock, check_optional_int, check_seconds

_LOW_WATER = 0.9
_TMP = ".tmp"


@dataclass(frozen=True)
class FileStorageConfig:
    """``root``: the directory (created if missing; engines that share it share pages);
    ``capacity_bytes``: the size cap, ``None`` for none; ``fsync``: flush each page to disk
    before it becomes visible (slower; survives a machine crash); ``retry_after_s`` and
    ``clock``: see :class:`StorageBackend`. Every field is checked here:
    :class:`ConfigTypeError` for a wrong type (a bool cap, ``fsync="no"``),
    :class:`ConfigError` for a bad value (an empty root, a cap <= 0)."""

    root: str | Path
    capacity_bytes: int | None = None
    fsync: bool = False
    retry_after_s: float = 0.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    def __post_init__(self) -> None:
        normalise_ints(self)
        if not isinstance(self.root, (str, os.PathLike)):
            raise ConfigTypeError(f"FileStorageConfig.root must be a path, got {self.root!r}")
        if not os.fspath(self.root):  # Path("") would be ".": pages wherever the engine runs
            raise ConfigError("FileStorageConfig.root must not be empty")
        check_optional_int("FileStorageConfig.capacity_bytes", self.capacity_bytes, 1)
        check_bool("FileStorageConfig.fsync", self.fsync)
        check_seconds("FileStorageConfig.retry_after_s", self.retry_after_s, positive=False)
        check_clock("FileStorageConfig.clock", self.clock)


class FileStorage(StorageBackend):
    """Pages as files under ``config.root``; see :class:`StorageBackend` for the contract."""

    def __init__(self, config: FileStorageConfig) -> None:
        if not isinstance(config, FileStorageConfig):
            raise ConfigTypeError(f"FileStorage needs a FileStorageConfig, got {config!r:.80}")
        super().__init__(config.retry_after_s, config.clock)
        self._config = config
        self._root = Path(config.root)
        (self._root / _TMP).mkdir(parents=True, exist_ok=True)
        self._bytes = sum(size for _path, size, _mtime in self._scan())

    def _path(self, key: str) -> Path:
        return self._root / f"{zlib.crc32(key.encode()) & 0xFF:02x}" / key

    def _exists(self, keys: list[str]) -> list[bool]:
        return [self._path(key).is_file() for key in keys]

    def _read(self, keys: list[str], size: int) -> list[bytes | str | None]:
        return [self._read_one(key) for key in keys]

    def _read_one(self, key: str) -> bytes | str | None:
        path = self._path(key)
        try:
            blob = path.read_bytes()
            os.utime(path)
        except FileNotFoundError:
            return None
        except OSError:
            return "error"
        return blob

    def _write(self, keys: list[str], blobs: list[bytes]) -> list[str | None]:
        faults = [self._write_one(key, blob) for key, blob in zip(keys, blobs)]
        if self._config.capacity_bytes is not None and self._bytes > self._config.capacity_bytes:
            self._shrink(int(self._config.capacity_bytes * _LOW_WATER))
        return faults

    def _write_one(self, key: str, blob: bytes) -> str | None:
        cap = self._config.capacity_bytes
        if cap is not None and len(blob) > cap:
            return "full"
        path = self._path(key)
        temporary = self._root / _TMP / uuid.uuid4().hex
        try:
            with open(temporary, "wb") as handle:
                handle.write(blob)
                if self._config.fsync:
                    handle.flush()
                    os.fsync(handle.fileno())
            path.parent.mkdir(exist_ok=True)
            os.replace(temporary, path)
        except OSError as error:
            temporary.unlink(missing_ok=True)
            return "full" if error.errno in (errno.ENOSPC, errno.EDQUOT) else "error"
        self._bytes += len(blob)
        return None

    def _shrink(self, target: int) -> None:
        files = sorted(self._scan(), key=lambda item: item[2])
        total = sum(size for _path, size, _mtime in files)
        for path, size, _mtime in files:
            if total <= target:
                break
            path.unlink(missing_ok=True)
            total -= size
        self._bytes = total

    def _scan(self) -> list[tuple[Path, int, float]]:
        found: list[tuple[Path, int, float]] = []
        for folder in self._root.iterdir():
            if folder.name == _TMP or not folder.is_dir():
                continue
            for entry in os.scandir(folder):
                try:
                    info = entry.stat()
                except FileNotFoundError:  # another engine's cleanup got there first
                    continue
                found.append((Path(entry.path), info.st_size, info.st_mtime))
        return found

    def _remove(self, keys: list[str]) -> None:
        for key in keys:
            self._path(key).unlink(missing_ok=True)

    def _clear(self) -> None:
        for folder in self._root.iterdir():
            if folder.name != _TMP and folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
        self._bytes = 0

    def _classify(self, error: Exception) -> str:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return "full"
        return "error"
