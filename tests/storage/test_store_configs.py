"""Issue #33, item 6, on the stores: a configuration a store would only trip over at its first
call (Redis port 70000 or db "x": an endless stream of ``unavailable`` faults; a FileStorage
cap that is a bool, ``fsync="no"``, an empty root) is refused when the config is made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from radixkv.errors import ConfigError, ConfigTypeError
from radixkv.storage import (
    FileStorage,
    FileStorageConfig,
    RedisStorageConfig,
    StorageLayout,
    StorageTier,
)

BAD_REDIS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"port": 70000}, ConfigError, "port must be 1..65535"),
    ({"port": 0}, ConfigError, "port must be 1..65535"),
    ({"port": "6379"}, ConfigTypeError, "port must be an int"),
    ({"port": True}, ConfigTypeError, "port must be an int"),
    ({"db": "x"}, ConfigTypeError, "db must be an int"),
    ({"db": -1}, ConfigError, "db must be >= 0"),
    ({"host": ""}, ConfigError, "host must not be empty"),
    ({"host": None}, ConfigTypeError, "host must be a str"),
    ({"unix_socket": ""}, ConfigError, "unix_socket must not be empty"),
    ({"unix_socket": 5}, ConfigTypeError, "unix_socket must be a str or None"),
    ({"password": 1234}, ConfigTypeError, "password must be a str or None"),
    ({"timeout_s": "1"}, ConfigTypeError, "timeout_s must be a number"),
    ({"timeout_s": float("nan")}, ConfigError, "timeout_s must be a finite number > 0"),
    ({"retries": 1.5}, ConfigTypeError, "retries must be an int"),
    ({"ttl_s": 0}, ConfigError, "ttl_s must be >= 1"),
    ({"retry_after_s": -1}, ConfigError, "retry_after_s must be a finite number >= 0"),
    ({"prefix": "a*b"}, ConfigError, "without glob chars"),
    ({"clock": 5}, ConfigTypeError, "clock must be a callable"),
]


@pytest.mark.parametrize(("fields", "error", "message"), BAD_REDIS)
def test_a_redis_config_that_could_never_work_is_refused(
        fields: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        RedisStorageConfig(**fields)


def test_a_redis_config_takes_numpy_ints_and_a_path_for_the_socket(tmp_path: Path) -> None:
    config = RedisStorageConfig(port=np.int64(6380), db=np.int32(2),  # type: ignore[arg-type]
                                unix_socket=tmp_path / "redis.sock")  # type: ignore[arg-type]
    assert (config.port, config.db) == (6380, 2) and type(config.port) is int
    assert config.unix_socket == str(tmp_path / "redis.sock")


def test_a_redis_store_refuses_what_is_no_redis_config() -> None:
    pytest.importorskip("redis", reason="redis is not installed (pip install -e '.[storage]')")
    from radixkv.storage import RedisStorage

    with pytest.raises(ConfigTypeError, match="needs a RedisStorageConfig"):
        RedisStorage({"port": 6379})  # type: ignore[arg-type]


BAD_FILE: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"capacity_bytes": True}, ConfigTypeError, "capacity_bytes must be an int"),
    ({"capacity_bytes": 1.5e9}, ConfigTypeError, "capacity_bytes must be an int"),
    ({"capacity_bytes": 0}, ConfigError, "capacity_bytes must be >= 1"),
    ({"fsync": "no"}, ConfigTypeError, "fsync must be a bool"),
    ({"fsync": 0}, ConfigTypeError, "fsync must be a bool"),
    ({"retry_after_s": "soon"}, ConfigTypeError, "retry_after_s must be a number"),
    ({"clock": "monotonic"}, ConfigTypeError, "clock must be a callable"),
]


@pytest.mark.parametrize(("fields", "error", "message"), BAD_FILE)
def test_a_file_config_with_a_bad_field_is_refused(
        tmp_path: Path, fields: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        FileStorageConfig(root=tmp_path, **fields)
    assert list(tmp_path.iterdir()) == []  # nothing was made


def test_an_empty_file_root_is_refused_rather_than_taken_as_the_working_directory() -> None:
    with pytest.raises(ConfigError, match="root must not be empty"):
        FileStorageConfig(root="")


def test_a_file_root_must_be_a_path() -> None:
    with pytest.raises(ConfigTypeError, match="root must be a path"):
        FileStorageConfig(root=None)  # type: ignore[arg-type]


def test_a_file_store_refuses_what_is_no_file_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigTypeError, match="needs a FileStorageConfig"):
        FileStorage(str(tmp_path))  # type: ignore[arg-type]


def test_a_good_file_config_still_builds_a_store(tmp_path: Path) -> None:
    config = FileStorageConfig(root=str(tmp_path / "l3"), capacity_bytes=np.int64(1 << 20),  # type: ignore[arg-type]
                               fsync=True)
    assert type(config.capacity_bytes) is int
    store = FileStorage(config)
    assert store.exists_prefix(["k"]) == 0


@pytest.mark.parametrize(("fields", "error", "message"), [
    ({"wait_timeout_s": 0}, ConfigError, "wait_timeout_s must be a finite number > 0"),
    ({"wait_timeout_s": float("inf")}, ConfigError, "wait_timeout_s must be a finite"),
    ({"wait_timeout_s": "60"}, ConfigError, "wait_timeout_s must be a finite"),
    ({"wait_timeout_s": True}, ConfigError, "wait_timeout_s must be a finite"),
    ({"clock": None}, ConfigTypeError, "clock must be a callable"),
    ({"io_thread": "no"}, ConfigTypeError, "io_thread must be a bool"),
    ({"flush_on_close": 1}, ConfigTypeError, "flush_on_close must be a bool"),
])
def test_a_storage_tier_with_an_unbounded_or_unreadable_wait_is_refused(
        fields: dict[str, Any], error: type[Exception], message: str) -> None:
    layout = StorageLayout(model="m", dtype="float32", page_size=4, component="full",
                           layers=(0, 1))
    with pytest.raises(error, match=message):
        StorageTier(layouts=(layout,), **fields)
