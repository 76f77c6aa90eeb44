"""The host buffers a copy engine exposes are checked against the declared layouts when the
storage tier is built: an engine whose buffers differ from what it declares would read
another engine's pages, under the same keys, as another type (issue #33 item 2)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from radixkv import CacheConfig, HostTier, NumpyCopyEngine, PrefixCache, StorageTier
from radixkv.errors import ConfigError, ConfigTypeError, CopyEngineError
from radixkv.storage import FileStorage, FileStorageConfig, StorageLayout

HOST = 64


def layout(**changes: Any) -> StorageLayout:
    fields: dict[str, Any] = dict(model="m@1", dtype="float32", page_size=4, component="full",
                                  layers=(0, 1), row_shape=(2,))
    return StorageLayout(**{**fields, **changes})


def build(tmp_path: Path, host: object, declared: StorageLayout | None = None,
          copier: NumpyCopyEngine | None = None) -> PrefixCache:
    """A cache whose copy engine's host buffer is ``host`` under the layout ``declared``."""
    if copier is None:
        copier = NumpyCopyEngine()
        copier.register("full", "device", np.zeros((64, 2), np.float32))
        copier._arrays[("full", "host")] = host  # type: ignore[assignment]  # any object
    config = CacheConfig(capacity=64, page_size=4, host=HostTier(capacity=HOST),
                         storage=StorageTier(layouts=(declared or layout(),)))
    return PrefixCache(config, copier, storage=FileStorage(FileStorageConfig(root=tmp_path)))


def storage_threads() -> int:
    return sum(thread.name.startswith("radixkv-storage") for thread in threading.enumerate())


def test_buffers_that_fit_the_layout_build() -> None:
    layout().check_buffer(np.zeros((HOST, 2), np.float32), HOST)
    layout().check_buffer(np.zeros((HOST + 8, 2), np.float32), HOST)  # more rows: unused


def test_another_dtype_with_rows_of_the_same_bytes_is_refused(tmp_path: Path) -> None:
    """The issue's case: float32 x 2 declared (and written by the fleet), float64 x 1 held:
    every row has 8 bytes, so without the check the pages read back as garbage hits."""
    with pytest.raises(ConfigError, match=r"float64 elements.*dtype '<f4'"):
        build(tmp_path, np.zeros((HOST, 1), np.float64), layout())
    with pytest.raises(ConfigError, match="float64 elements"):
        build(tmp_path, np.zeros((HOST, 2), np.float64), layout())


def test_another_row_shape_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"rows of shape \(4,\).*row_shape \(2,\)"):
        build(tmp_path, np.zeros((HOST, 4), np.float32))
    with pytest.raises(ConfigError, match=r"rows of shape \(2, 1\)"):
        build(tmp_path, np.zeros((HOST, 2, 1), np.float32))


def test_fewer_rows_than_host_slots_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"has 32 rows, the host tier has {HOST} slots"):
        build(tmp_path, np.zeros((32, 2), np.float32))


def test_a_read_only_or_non_array_buffer_is_refused(tmp_path: Path) -> None:
    frozen = np.zeros((HOST, 2), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ConfigError, match="read-only"):
        build(tmp_path, frozen)
    with pytest.raises(ConfigTypeError, match="numpy array"):
        build(tmp_path, [[0.0, 0.0]] * HOST)


class RaisingHostBuffer(NumpyCopyEngine):
    def host_buffer(self, component: str) -> np.ndarray | None:
        raise RuntimeError("engine bug")


def test_a_host_buffer_call_that_raises_is_a_typed_error_and_builds_nothing(
    tmp_path: Path,
) -> None:
    before = storage_threads()
    with pytest.raises(CopyEngineError, match=r"host_buffer\('full'\) raised RuntimeError"):
        build(tmp_path, None, copier=RaisingHostBuffer())
    assert storage_threads() == before  # no I/O thread was started


def test_raw_bits_of_a_type_numpy_lacks_fit_by_width() -> None:
    bf16 = layout(dtype="bfloat16")
    bf16.check_buffer(np.zeros((HOST, 2), np.uint16), HOST)  # torch bfloat16 bits
    with pytest.raises(ConfigError, match="float16 elements"):
        bf16.check_buffer(np.zeros((HOST, 2), np.float16), HOST)  # same width, other type
    with pytest.raises(ConfigError, match="uint8 elements"):
        bf16.check_buffer(np.zeros((HOST, 2), np.uint8), HOST)


def test_record_types_are_keyed_by_their_fields() -> None:
    """numpy spells both '|V8': one digest would let one engine's (i4, f4) records be read
    as another's (f4, i4)."""
    assert layout(dtype="i4,f4").digest != layout(dtype="f4,i4").digest
    assert layout(dtype="i4,f4").digest == layout(dtype="int32,float32").digest
    records = np.zeros((HOST, 2), np.dtype("i4,f4"))
    layout(dtype="i4,f4").check_buffer(records, HOST)
    with pytest.raises(ConfigError, match="elements"):
        layout(dtype="f4,i4").check_buffer(records, HOST)


def test_an_object_dtype_is_refused() -> None:
    with pytest.raises(ConfigError, match="Python objects"):
        layout(dtype="O")
