"""The contract of StorageBackend, run against every backend on its real server."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

from radixkv.errors import InvalidArgumentError, InvalidSlotsError
from radixkv.storage import FAULTS, MooncakeStorage, PageRows, StorageBackend
from radixkv.storage.framing import HEADER_BYTES, frame

from .servers import LEASE_MS
from .support import PAGE, ROW, empty, host, keys, rows

PAGE_BYTES = PAGE * int(np.prod(ROW)) * 2


def settle(backend: StorageBackend) -> None:
    """Wait out Mooncake's lease on objects just read (it blocks their removal)."""
    if isinstance(backend, MooncakeStorage):
        time.sleep(2 * LEASE_MS / 1000)


def test_pages_round_trip_bit_for_bit_into_other_slots(backend: StorageBackend) -> None:
    source, names = host(3), keys(3)
    assert backend.put_from(names, rows(source, range(3))) == [True] * 3
    target = empty(5)
    assert backend.get_into(names, rows(target, [4, 0, 2])) == [True] * 3
    np.testing.assert_array_equal(target[16:20], source[0:4])
    np.testing.assert_array_equal(target[0:4], source[4:8])
    np.testing.assert_array_equal(target[8:12], source[8:12])
    assert not target[4:8].any() and not target[12:16].any()


def test_exists_prefix_counts_only_the_leading_present_pages(backend: StorageBackend) -> None:
    source, names = host(6), keys(6)
    stored = [0, 1, 2, 4]
    backend.put_from([names[i] for i in stored], rows(source, stored))
    assert backend.exists_prefix(names) == 3
    assert backend.exists_prefix(names[3:]) == 0
    assert backend.exists_prefix(names[4:5]) == 1
    assert backend.exists_prefix([]) == 0


def test_absent_pages_read_as_misses_and_leave_rows_untouched(backend: StorageBackend) -> None:
    source, names = host(3), keys(3)
    backend.put_from([names[1]], rows(source, [1]))
    target = np.full((3 * PAGE, *ROW), 7, dtype=np.float16)
    assert backend.get_into(names, rows(target, range(3))) == [False, True, False]
    assert (target[0:4] == 7).all() and (target[8:12] == 7).all()
    np.testing.assert_array_equal(target[4:8], source[4:8])
    assert backend.stats().faults["missing"] == 2


def test_batches_larger_than_one_round_trip_are_split(backend: StorageBackend) -> None:
    count = 2 * backend.max_batch + 44
    source, names = host(count), keys(count)
    assert backend.put_from(names, rows(source, range(count))) == [True] * count
    assert backend.exists_prefix(names) == count
    target = empty(count)
    assert backend.get_into(names, rows(target, range(count))) == [True] * count
    np.testing.assert_array_equal(target, source)


def test_a_page_read_with_another_row_size_is_corrupt_not_data(backend: StorageBackend) -> None:
    source, names = host(1), keys(1)
    backend.put_from(names, rows(source, [0]))
    wider = np.zeros((PAGE, 2, 16), dtype=np.float16)
    assert backend.get_into(names, PageRows(wider, np.arange(PAGE).reshape(1, PAGE))) == [False]
    assert not wider.any()
    assert backend.stats().faults["corrupt"] == 1


@pytest.mark.parametrize("damage", ["truncated", "flipped", "another key's"])
def test_a_bad_object_is_deleted_once_a_read_found_it(backend: StorageBackend,
                                                      damage: str) -> None:
    source, names = host(2), keys(2)
    good = frame(names[0], source[:PAGE].tobytes())
    blob = {"truncated": good[:-3], "flipped": good[:-1] + bytes([good[-1] ^ 1]),
            "another key's": frame(names[1], source[:PAGE].tobytes())}[damage]
    assert backend._write(names[:1], [blob]) == [None]  # a faulty writer's object
    backend.put_from(names[1:], rows(source, [1]))
    assert backend.exists_prefix(names) == 2
    target = empty(2)
    assert backend.get_into(names, rows(target, range(2))) == [False, True]
    assert not target[:PAGE].any()
    stats = backend.stats()
    assert (stats.faults["corrupt"], stats.purged_pages) == (1, 1)
    # gone for every engine: a lookup no longer finds it, so nobody reads it again
    assert backend.exists_prefix(names) == 0 and backend.exists(names) == [False, True]
    assert backend.get_into(names[1:], rows(target, [1])) == [True]
    assert backend.stats().faults["corrupt"] == 1


def test_remove_drops_pages_and_absent_keys_are_fine(backend: StorageBackend) -> None:
    source, names = host(3), keys(3)
    backend.put_from(names, rows(source, range(3)))
    settle(backend)
    backend.remove([names[0], names[2], keys(1)[0]])
    assert backend.exists_prefix(names) == 0
    assert backend.exists_prefix(names[1:]) == 1
    assert backend.stats().removed_pages == 3


def test_clear_drops_every_page(backend: StorageBackend) -> None:
    source, names = host(4), keys(4)
    backend.put_from(names, rows(source, range(4)))
    settle(backend)
    backend.clear()
    assert backend.exists_prefix(names[:1]) == 0
    assert backend.exists_prefix(names[3:]) == 0


def test_a_second_engine_reads_what_a_closed_first_engine_wrote(
        open_backend: Callable[[], StorageBackend]) -> None:
    writer, source, names = open_backend(), host(2), keys(2)
    assert writer.put_from(names, rows(source, range(2))) == [True, True]
    writer.close()
    reader, target = open_backend(), empty(2)
    assert reader.exists_prefix(names) == 2
    assert reader.get_into(names, rows(target, range(2))) == [True, True]
    np.testing.assert_array_equal(target, source)


def test_writing_a_page_twice_keeps_it_whole(backend: StorageBackend) -> None:
    source, names = host(1), keys(1)
    assert backend.put_from(names, rows(source, [0])) == [True]
    assert backend.put_from(names, rows(source, [0])) == [True]
    target = empty(1)
    assert backend.get_into(names, rows(target, [0])) == [True]
    np.testing.assert_array_equal(target, source)


def test_stats_count_calls_pages_and_bytes_exactly(backend: StorageBackend) -> None:
    source, names = host(3), keys(3)
    backend.put_from(names[:2], rows(source, range(2)))
    backend.exists_prefix(names)
    backend.get_into(names, rows(empty(3), range(3)))
    stats = backend.stats()
    object_bytes = HEADER_BYTES + PAGE_BYTES
    assert (stats.put_pages, stats.put_stored, stats.written_bytes) == (2, 2, 2 * object_bytes)
    assert (stats.exists_calls, stats.exists_pages) == (1, 2)
    assert (stats.get_pages, stats.get_hits, stats.read_bytes) == (3, 2, 2 * object_bytes)
    assert stats.faults == {**dict.fromkeys(FAULTS, 0), "missing": 1}
    assert stats.write_seconds > 0 and stats.read_seconds > 0 and stats.exists_seconds > 0


@pytest.mark.parametrize("bad", [["../escape"], [".hidden"], ["a b"], [""], [b"bytes"], "one",
                                 ["x" * 201]])
def test_bad_keys_raise_and_store_nothing(backend: StorageBackend, bad: object) -> None:
    source = host(1)
    with pytest.raises(InvalidArgumentError):
        backend.put_from(bad, rows(source, [0]))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        backend.exists_prefix(bad)  # type: ignore[arg-type]
    assert backend.stats().put_pages == 0


def test_rows_of_another_length_than_the_keys_raise(backend: StorageBackend) -> None:
    with pytest.raises(InvalidArgumentError):
        backend.put_from(keys(2), rows(host(3), range(3)))
    with pytest.raises(InvalidSlotsError):
        PageRows(host(1), np.array([[0, 1, 2, 99]]))
    frozen = empty(1)
    frozen.flags.writeable = False
    with pytest.raises(InvalidSlotsError):
        backend.get_into(keys(1), rows(frozen, [0]))
    assert backend.stats().put_pages == backend.stats().get_pages == 0


def test_a_key_repeated_in_one_batch_reads_and_writes_every_copy(
        backend: StorageBackend) -> None:
    source, names = host(2), keys(2)
    twice = [names[0], names[1], names[0]]
    assert backend.exists_prefix(names) == 0
    assert backend.put_from(twice, rows(source, [0, 1, 0])) == [True] * 3
    target = empty(3)
    assert backend.get_into(twice, rows(target, range(3))) == [True] * 3
    assert backend.get_into(names[:1] * 2, rows(target, [0, 2])) == [True] * 2
    np.testing.assert_array_equal(target[0:4], source[0:4])
    np.testing.assert_array_equal(target[4:8], source[4:8])
    np.testing.assert_array_equal(target[8:12], source[0:4])
