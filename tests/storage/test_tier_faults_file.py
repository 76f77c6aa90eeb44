"""FileStorage faults through whole caches: a page removed between the L3 query and its
read, damaged page files, a store too small for a page, a size cap evicting pages, the
directory gone. Each reads as a miss, is counted, and every lease reads the right bytes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from radixkv.storage import FileStorage, FileStorageConfig

from .fault_support import (
    PROMPTS,
    closed,
    faults,
    full_keys,
    queried,
    reset_whole,
    served,
    settled,
    tier,
)
from .tier_support import PAGE, Engine, engine

PROMPT = PROMPTS[0]


def store(tmp_path: Path, capacity: int | None = None) -> FileStorage:
    return FileStorage(FileStorageConfig(root=tmp_path / "l3", capacity_bytes=capacity))


def page_file(tmp_path: Path, tokens: list[int], page: int) -> Path:
    (path,) = (tmp_path / "l3").glob(f"*/{full_keys(tokens)[page]}")
    return path


def written(tmp_path: Path, *prompts: list[int]) -> None:
    """A first engine serves ``prompts`` and closes: their pages are in the store."""
    first = engine(store(tmp_path))
    for tokens in prompts:
        assert served(first, tokens) == 0
    closed(first)


def reader(tmp_path: Path) -> Engine:
    return engine(store(tmp_path), wait_policy="wait_complete")


def test_a_page_removed_between_query_and_read_cuts_the_restore_before_it(
        tmp_path: Path) -> None:
    written(tmp_path, PROMPT)
    second = reader(tmp_path)
    queried(second, PROMPT)
    store(tmp_path).remove(full_keys(PROMPT)[10:11])  # another engine's cleanup
    second.cache.wait()
    second.audited()
    stats = tier(second)
    assert (stats.prefetches, stats.lookups, stats.hit_pages) == (1, 1, 16)
    assert (stats.restores, stats.restored_tokens, stats.misses) == (1, 40, 0)
    assert faults(second) == {"missing": 1}
    assert served(second, PROMPT) == 40
    stats = tier(second)  # the admit asked for the rest: page 10 is gone, a miss
    assert (stats.prefetches, stats.lookups, stats.misses) == (2, 2, 1)
    closed(second)
    third = reader(tmp_path)  # the second engine wrote pages 10-15 again
    assert served(third, PROMPT) == 64 and faults(third) == {}
    closed(third)


@pytest.mark.parametrize("damage", ["truncate", "flip", "other page", "garbage"])
def test_a_damaged_page_file_is_a_corrupt_miss_and_the_next_write_repairs_it(
        tmp_path: Path, damage: str) -> None:
    written(tmp_path, PROMPT)
    path = page_file(tmp_path, PROMPT, 5)
    blob = path.read_bytes()
    path.write_bytes({"truncate": blob[:-7], "flip": blob[:-1] + bytes([blob[-1] ^ 0x40]),
                      "other page": page_file(tmp_path, PROMPT, 6).read_bytes(),
                      "garbage": b"\0" * len(blob)}[damage])
    second = reader(tmp_path)
    assert served(second, PROMPT) == 5 * PAGE
    stats = tier(second)
    assert (stats.hit_pages, stats.restores, stats.restored_tokens) == (16, 1, 20)
    assert faults(second) == {"corrupt": 1}
    closed(second)
    third = reader(tmp_path)
    assert served(third, PROMPT) == 64 and faults(third) == {}
    closed(third)


@pytest.mark.parametrize("damage", ["truncate", "other page"])
def test_a_damaged_page_is_deleted_once_found_so_no_other_engine_reads_it(
        tmp_path: Path, damage: str) -> None:
    written(tmp_path, PROMPT)
    path = page_file(tmp_path, PROMPT, 5)
    blob = path.read_bytes()
    path.write_bytes(blob[:-7] if damage == "truncate" else
                     page_file(tmp_path, PROMPT, 6).read_bytes())
    # read-only engines: none writes page 5 again, so only the deletion keeps it from them
    readers = [engine(store(tmp_path), wait_policy="wait_complete", write=False)
               for _ in range(3)]
    for made in readers:
        assert served(made, PROMPT) == 5 * PAGE
    assert [faults(made) for made in readers] == [{"corrupt": 1}, {}, {}]
    assert [tier(made).backend.get_pages for made in readers] == [16, 5, 5]
    assert [tier(made).backend.purged_pages for made in readers] == [1, 0, 0]
    assert not path.exists()
    for made in readers:
        closed(made)


def test_a_store_smaller_than_a_page_refuses_every_put_as_full(tmp_path: Path) -> None:
    first = engine(store(tmp_path, capacity=64))
    assert served(first, PROMPT) == 0
    settled(first)
    stats = tier(first)
    assert (stats.queued_pages, stats.written_pages, stats.failed_pages) == (16, 0, 16)
    assert faults(first) == {"full": 16}
    closed(first)
    second = reader(tmp_path)
    assert served(second, PROMPT) == 0
    assert (tier(second).misses, tier(second).restores) == (1, 0)
    closed(second)


def test_a_size_cap_evicting_pages_leaves_only_whole_prefixes_to_restore(
        tmp_path: Path) -> None:
    page_bytes = page_file_size(tmp_path)
    first = engine(store(tmp_path, capacity=page_bytes * 40))
    for tokens in PROMPTS:  # 64 pages into room for 36 (the cap cleans down to 90%)
        assert served(first, tokens) == 0
    closed(first)
    probe = store(tmp_path)
    leading = [probe.exists_prefix(full_keys(tokens)) for tokens in PROMPTS]
    assert leading[0] == 0 and leading[2:] == [16, 16]  # the oldest went first
    assert sum(probe.exists(full_keys(t)).count(True) for t in PROMPTS) <= 40
    second = reader(tmp_path)
    for tokens, pages in zip(PROMPTS, leading):
        assert served(second, tokens) == (pages * PAGE if pages >= 2 else 0)
    assert faults(second) == {}
    reset_whole(second)
    closed(second)


def page_file_size(tmp_path: Path) -> int:
    scratch = tmp_path / "scratch"
    first = engine(FileStorage(FileStorageConfig(root=scratch)))
    served(first, PROMPT[:PAGE * 2])
    closed(first)
    sizes = {path.stat().st_size for path in scratch.glob("[0-9a-f]*/*")}
    (size,) = sizes
    shutil.rmtree(scratch)
    return size


def test_the_directory_removed_mid_run_costs_failed_writes_and_misses(tmp_path: Path) -> None:
    written(tmp_path, PROMPT)
    second = reader(tmp_path)
    shutil.rmtree(tmp_path / "l3")
    for tokens in PROMPTS[:2]:
        assert served(second, tokens) == 0
    settled(second)
    stats = tier(second)
    assert (stats.misses, stats.written_pages, stats.failed_pages) == (2, 0, 32)
    assert faults(second) == {"error": 32}
    reset_whole(second)
    closed(second)
