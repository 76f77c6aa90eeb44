"""Shared setup of the storage-tier (L3) exactness tests: device and host pools too small to
keep what the workload reuses, an L3 (a FileStorage in a temporary directory) that keeps all
of it, and broken variants of the storage tier.

Device pools hold 128 slots (12 MAMBA states) and host pools 256 (24 states): the host
tier keeps a little more than the device, so a prefix evicted from both comes back only
from L3. A prompt goes to L3 when it holds at least ``THRESHOLD`` tokens more than device
and host serve.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from radixkv import CacheConfig
from radixkv.model import Engine, ModelConfig, Reference, RequestSpec, VerifyReport, verify
from radixkv.model.storage import L3Settings
from radixkv.storage import FileStorage, FileStorageConfig, StorageBackend, restore, tier

from .host_support import host_workload
from .support import small_cache

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
                  wait_policy: str = "wait_complete", model: str | None = None,
                  **sizes: Any) -> CacheConfig:
    """A cache for ``combo`` with the tiny device and host pools above and an L3."""
    settings: dict[str, Any] = {
        "capacity": DEVICE, "swa_capacity": DEVICE, "chunked_capacity": DEVICE,
        "states": DEVICE_STATES, "host_capacity": HOST, "host_states": HOST_STATES,
        "write_policy": write_policy,
        "storage": L3Settings(prefetch_threshold=THRESHOLD, wait_policy=wait_policy,
                              timeout_s=TIMEOUT_S, model=model)}
    settings.update(sizes)
    return small_cache(combo, page, **settings)


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
        patch.setattr(tier, "best_cut", primary_only_cut)
        yield
