"""Stores named by a URL (radixkv.storage.urls), as the engine integrations take them: the
fields of each scheme, a clear error for each bad URL, and the stores built."""

from __future__ import annotations

from pathlib import Path

import pytest

from radixkv.errors import ConfigError
from radixkv.storage import FileStorage, RedisStorage
from radixkv.storage.urls import check_store_url, redis_fields, store_from_url


@pytest.mark.parametrize("url, words", [
    ("s3://bucket", "the scheme must be"),
    ("redis://host:port", "Port could not be cast"),
    ("redis://127.0.0.1/x", "invalid literal"),
    ("redis+unix://", "no socket path"),
    ("file://", "needs a path"),
])
def test_a_bad_url_says_what_is_wrong(url: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        check_store_url(url)


def test_redis_urls_give_host_port_db_and_password() -> None:
    assert redis_fields("redis://:p%40ss@10.0.0.5:6380/3") == {
        "host": "10.0.0.5", "port": 6380, "db": 3, "password": "p@ss"}
    assert redis_fields("redis://") == {"host": "127.0.0.1", "port": 6379, "db": 0,
                                        "password": None}
    assert redis_fields("redis+unix:///run/redis.sock?db=2") == {
        "unix_socket": "/run/redis.sock", "db": 2, "password": None}


def test_store_urls_build_their_stores(tmp_path: Path) -> None:
    store = store_from_url(f"file://{tmp_path}", "radixkv")
    assert isinstance(store, FileStorage)
    store.close()
    pytest.importorskip("redis")
    tcp = store_from_url("redis://:pw@127.0.0.1:6390/3", "fleet")
    unix = store_from_url(f"redis+unix://{tmp_path}/redis.sock?db=1", "fleet")
    assert isinstance(tcp, RedisStorage) and isinstance(unix, RedisStorage)
    for store in (tcp, unix):
        store.close()
