"""StorageWorker: backend calls on a background thread, futures for their results."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from radixkv.errors import InvalidArgumentError
from radixkv.storage import FileStorage, FileStorageConfig, StorageWorker

from .support import empty, host, keys, rows


class RecordingStorage(FileStorage):
    """A real FileStorage that notes the thread each raw call ran on."""

    def __init__(self, root: Path) -> None:
        super().__init__(FileStorageConfig(root=root))
        self.threads: set[int] = set()

    def _exists(self, keys: list[str]) -> list[bool]:
        self.threads.add(threading.get_ident())
        return super()._exists(keys)

    def _write(self, keys: list[str], blobs: list[bytes]) -> list[str | None]:
        self.threads.add(threading.get_ident())
        return super()._write(keys, blobs)


def test_calls_run_off_the_caller_thread_and_resolve_in_order(tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path)
    source, names = host(3), keys(3)
    with StorageWorker(storage) as worker:
        put = worker.put_from(names, rows(source, range(3)))
        exists = worker.exists_prefix(names)
        target = empty(3)
        got = worker.get_into(names, rows(target, range(3)))
        assert put.result(10) == [True] * 3
        assert exists.result(10) == 3
        assert got.result(10) == [True] * 3
    np.testing.assert_array_equal(target, source)
    assert storage.threads and threading.get_ident() not in storage.threads
    assert worker.stats().put_stored == 3


def test_without_a_thread_calls_run_on_the_caller_thread_and_are_done_on_return(
        tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path)
    source, names = host(3), keys(3)
    with StorageWorker(storage, thread=False) as worker:
        put = worker.put_from(names, rows(source, range(3)))
        assert put.done() and put.result(0) == [True] * 3
        target = empty(3)
        got = worker.get_into(names, rows(target, range(3)))
        assert got.done() and got.result(0) == [True] * 3
        failed = worker.call(lambda backend: 1 // 0)  # a job's error stays in its future
        assert failed.done() and isinstance(failed.exception(0), ZeroDivisionError)
    np.testing.assert_array_equal(target, source)
    assert storage.threads == {threading.get_ident()}


def test_bad_arguments_raise_on_the_caller_thread_and_queue_nothing(tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path)
    with StorageWorker(storage) as worker:
        with pytest.raises(InvalidArgumentError):
            worker.put_from(["no/slash"], rows(host(1), [0]))
        with pytest.raises(InvalidArgumentError):
            worker.get_into(keys(2), rows(empty(1), [0]))
        with pytest.raises(InvalidArgumentError):
            worker.exists_prefix("abc")
    assert storage.threads == set() and storage.stats().put_pages == 0


def test_remove_and_clear_run_in_submission_order(tmp_path: Path) -> None:
    source, names = host(2), keys(2)
    with StorageWorker(FileStorage(FileStorageConfig(root=tmp_path))) as worker:
        worker.put_from(names, rows(source, range(2)))
        worker.remove(names[:1])
        first = worker.exists_prefix(names[1:])
        worker.clear()
        second = worker.exists_prefix(names[1:])
        assert (first.result(10), second.result(10)) == (1, 0)
