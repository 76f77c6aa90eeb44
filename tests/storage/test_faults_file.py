"""FileStorage faults: torn, truncated, corrupt and vanished files read as misses; the size
cap deletes the least recently used pages."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from radixkv.storage import FileStorage, FileStorageConfig
from radixkv.storage.framing import HEADER_BYTES

from .support import PAGE, ROW, empty, host, keys, rows

OBJECT = HEADER_BYTES + PAGE * int(np.prod(ROW)) * 2


def stored(tmp_path: Path, count: int, **config: object) -> tuple[FileStorage, list[str]]:
    storage = FileStorage(FileStorageConfig(root=tmp_path, **config))  # type: ignore[arg-type]
    names = keys(count)
    assert storage.put_from(names, rows(host(count), range(count))) == [True] * count
    return storage, names


def page_file(storage: FileStorage, key: str) -> Path:
    matches = list(storage._root.rglob(key))
    assert len(matches) == 1
    return matches[0]


def test_a_truncated_file_reads_as_a_corrupt_miss(tmp_path: Path) -> None:
    storage, names = stored(tmp_path, 2)
    path = page_file(storage, names[0])
    os.truncate(path, OBJECT - 10)
    target = np.full((2 * PAGE, *ROW), 3, dtype=np.float16)
    assert storage.exists_prefix(names) == 2
    assert storage.get_into(names, rows(target, range(2))) == [False, True]
    assert (target[:PAGE] == 3).all()
    assert storage.stats().faults["corrupt"] == 1


def test_a_flipped_byte_reads_as_a_corrupt_miss(tmp_path: Path) -> None:
    storage, names = stored(tmp_path, 1)
    path = page_file(storage, names[0])
    blob = bytearray(path.read_bytes())
    blob[HEADER_BYTES + 7] ^= 1
    path.write_bytes(bytes(blob))
    assert storage.get_into(names, rows(empty(1), [0])) == [False]
    assert storage.stats().faults["corrupt"] == 1


def test_a_file_copied_under_another_key_reads_as_corrupt(tmp_path: Path) -> None:
    storage, names = stored(tmp_path, 2)
    page_file(storage, names[1]).write_bytes(page_file(storage, names[0]).read_bytes())
    assert storage.get_into(names, rows(empty(2), range(2))) == [True, False]
    assert storage.stats().faults["corrupt"] == 1


def test_a_page_deleted_between_exists_and_get_is_a_counted_miss(tmp_path: Path) -> None:
    storage, names = stored(tmp_path, 3)
    assert storage.exists_prefix(names) == 3
    page_file(storage, names[1]).unlink()  # another engine's cleanup, say
    assert storage.get_into(names, rows(empty(3), range(3))) == [True, False, True]
    assert storage.stats().faults["missing"] == 1


def test_a_half_written_temporary_file_is_never_visible(tmp_path: Path) -> None:
    storage, names = stored(tmp_path, 1)
    fresh = keys(1)
    (tmp_path / ".tmp" / "partial").write_bytes(b"RKV\x01" + b"\0" * 10)  # a writer died here
    assert storage.exists_prefix(fresh) == 0
    other = FileStorage(FileStorageConfig(root=tmp_path))
    assert other.exists_prefix(names) == 1 and other.exists_prefix(fresh) == 0


def test_the_size_cap_removes_the_least_recently_used_pages(tmp_path: Path) -> None:
    storage, names = stored(tmp_path, 4, capacity_bytes=5 * OBJECT)
    for index, key in enumerate(names):  # distinct, increasing recency
        os.utime(page_file(storage, key), (1000 + index, 1000 + index))
    assert storage.get_into(names[:1], rows(empty(1), [0])) == [True]  # page 0: most recent
    more = keys(2)
    assert storage.put_from(more, rows(host(2), range(2))) == [True, True]
    # 6 pages > cap 5: down to 90% of the cap = 4 pages, oldest first (pages 1 and 2)
    present = [storage.exists_prefix([key]) for key in names + more]
    assert present == [1, 0, 0, 1, 1, 1]


def test_a_page_larger_than_the_cap_is_refused_as_full(tmp_path: Path) -> None:
    storage = FileStorage(FileStorageConfig(root=tmp_path, capacity_bytes=OBJECT - 1))
    assert storage.put_from(keys(1), rows(host(1), [0])) == [False]
    assert storage.stats().faults["full"] == 1


def test_a_new_engine_counts_the_pages_already_on_disk_against_the_cap(tmp_path: Path) -> None:
    storage, names = stored(tmp_path, 4, capacity_bytes=5 * OBJECT)
    for index, key in enumerate(names):
        os.utime(page_file(storage, key), (1000 + index, 1000 + index))
    second = FileStorage(FileStorageConfig(root=tmp_path, capacity_bytes=5 * OBJECT))
    assert second.put_from(keys(2), rows(host(2), range(2))) == [True, True]
    assert [second.exists_prefix([key]) for key in names] == [0, 0, 1, 1]
