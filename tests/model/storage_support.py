"""Shared setup of the storage-tier (L3) exactness tests: device and host pools too small to
keep what the workload reuses, an L3 (a FileStorage in a temporary directory) that keeps all
of it, and broken variants of the storage tier.

Device pools hold 128 slots (12 MAMBA states) and host pools 256 (24 states): the host
tier keeps a little more than the device, so a prefix evicted from both comes back only
from L3. A prompt goes to L3 when it holds at least ``THRESHOLD`` tokens more than device
and host serve.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from radixkv import CacheConfig
from radixkv.model import Engine, ModelConfig, Reference, RequestSpec, VerifyReport, verify
from radixkv.model.caches import CacheSizes, cache_config
from radixkv.model.storage import L3Settings
from radixkv.storage import (
    FileStorage,
    FileStorageConfig,
    StorageBackend,
    restore,
    storage_controller,
)

from .host_support import host_workload
from .support import model_reference

DEVICE = 128
HOST = 256
DEVICE_STATES = 12
HOST_STATES = 24
THRESHOLD = 16
WAIT_POLICIES = ["best_effort", "wait_complete", "timeout"]
WRITE_POLICIES = ["write_through", "write_back"]
TIMEOUT_S = 0.001
"""Short enough that a prefetch may still be running when admission stops waiting."""


def storage_cache(combo: tuple[str, ...], page: int, write_policy: str = "write_through",
                  wait_policy: str = "wait_complete", name: str | None = None,
                  model: ModelConfig | None = None, **sizes: Any) -> CacheConfig:
    """A cache for ``combo`` with the tiny device and host pools above and an L3 whose
    layouts describe ``model``'s rows (default: the tests' model of ``combo``) under the
    model id ``name`` (``None``: derived from ``model``, weights included)."""
    settings: dict[str, Any] = {
        "capacity": DEVICE, "swa_capacity": DEVICE, "chunked_capacity": DEVICE,
        "states": DEVICE_STATES, "host_capacity": HOST, "host_states": HOST_STATES,
        "write_policy": write_policy, "storage": L3Settings(
            prefetch_threshold=THRESHOLD, wait_policy=wait_policy, timeout_s=TIMEOUT_S,
            model=name)}
    settings.update(sizes)
    if model is None:
        model = model_reference(combo).decoder.config
    return cache_config(combo, page, model, CacheSizes(**settings))


def file_store(folder: Path) -> FileStorage:
    return FileStorage(FileStorageConfig(root=folder))


def run(reference: Reference, config: CacheConfig, store: StorageBackend | None,
        specs: Sequence[RequestSpec] | None = None,
        engine: type[Engine] = Engine) -> VerifyReport:
    """One verified run over ``store`` (closed at the end)."""
    return verify(reference, config, host_workload() if specs is None else specs, chunk=20,
                  max_running=3, storage=store, engine=engine)


def failures(report: VerifyReport) -> list[str]:
    return [f"{group.group}: {group.mismatches}" for group in report.groups if not group.passed]


def other_model(model: ModelConfig) -> ModelConfig:
    """The same architecture with other weights (another seed)."""
    return ModelConfig(layers=model.layers, window=model.window, chunk=model.chunk,
                       seed=model.seed + 1)


class LossyStorage(FileStorage):
    """A store under memory pressure: it silently keeps only some pages (a key whose CRC
    is a multiple of 3 is dropped at put), so one component's page may be missing where
    another's is there, as a Redis with a ``maxmemory`` policy evicts keys one by one.
    Not a fault: a correct hit rule restores only cuts every component can serve."""

    def _write(self, keys: list[str], blobs: list[bytes]) -> list[str | None]:
        kept = [index for index, key in enumerate(keys) if zlib.crc32(key.encode()) % 3]
        written = super()._write([keys[i] for i in kept], [blobs[i] for i in kept])
        result: list[str | None] = [None] * len(keys)
        for index, outcome in zip(kept, written):
            result[index] = outcome
        return result


class RecordingStorage(FileStorage):
    """A FileStorage that remembers every key it was asked to read (on the I/O thread)."""

    def __init__(self, config: FileStorageConfig) -> None:
        super().__init__(config)
        self.read_keys: list[str] = []

    def _read(self, keys: list[str], size: int) -> list[bytes | str | None]:
        self.read_keys.extend(keys)
        return super()._read(keys, size)


def lossy_store(folder: Path) -> LossyStorage:
    return LossyStorage(FileStorageConfig(root=folder))


# ---------------------------------------------------------------------- broken variants


def primary_only_cut(components: Sequence[Any], start: int, limit: int, page: int,
                     present: Sequence[Sequence[bool]]) -> int | None:
    """Broken hit rule: the cut FULL alone allows, as if every other component's pages
    were wherever FULL's are (ignores SWA's and chunked's windows and MAMBA's state at
    the cut)."""
    return restore.best_cut(components[:1], start, limit, page, present[:1])


@contextmanager
def broken_hit_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The storage tier plans and takes its restores with :func:`primary_only_cut`."""
    with monkeypatch.context() as patch:
        patch.setattr(storage_controller, "best_cut", primary_only_cut)
        yield
