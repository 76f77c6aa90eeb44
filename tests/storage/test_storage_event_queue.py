"""The STORAGE event queue of a cache: bounded by ``event_queue_limit`` like the device's
queue (a full queue is discarded whole and counted), and not kept at all by a cache built
without events (issue #33: 3,000 requests queued 3,000 events with ``events=False``)."""

from __future__ import annotations

from pathlib import Path

from radixkv import BlockStored
from radixkv.storage import FileStorage, FileStorageConfig

from .tier_support import Engine, engine, serve


def store(tmp_path: Path) -> FileStorage:
    return FileStorage(FileStorageConfig(root=tmp_path / "l3"))


def wrote(made: Engine, prompts: int, first: int = 0) -> None:
    """Serve ``prompts`` unrelated 2-page prompts and let their puts land: one STORAGE
    event each."""
    for number in range(first, first + prompts):
        serve(made, list(range(1000 * (number + 1), 1000 * (number + 1) + 8)))
    assert made.cache.storage is not None
    made.cache.storage.settle()
    made.audited()


def test_a_cache_without_events_keeps_no_storage_events(tmp_path: Path) -> None:
    made = engine(store(tmp_path))
    wrote(made, 5)
    stats = made.cache.stats().storage
    assert stats is not None and stats.written_pages == 10  # the pages were stored ...
    assert made.cache.take_storage_events() == []  # ... and nobody asked to hear of it
    assert stats.events_dropped == 0  # not kept is not dropped
    made.cache.close()


def test_a_full_storage_event_queue_is_discarded_whole_and_counted(tmp_path: Path) -> None:
    made = engine(store(tmp_path), events=True, event_queue_limit=3)
    wrote(made, 5)  # the 4th event would pass the limit: all 4 go, then the 5th
    assert made.cache.take_storage_events() == []
    stats = made.cache.stats().storage
    assert stats is not None and stats.events_dropped == 5
    wrote(made, 2, first=5)  # after a take the queue keeps events again
    kept = made.cache.take_storage_events()
    assert [type(event) for event in kept] == [BlockStored, BlockStored]
    assert [event.token_ids[0] for event in kept] == [6000, 7000]  # type: ignore[union-attr]
    made.cache.close()


def test_storage_events_up_to_the_limit_are_all_kept(tmp_path: Path) -> None:
    made = engine(store(tmp_path), events=True, event_queue_limit=3)
    wrote(made, 3)
    assert len(made.cache.take_storage_events()) == 3
    stats = made.cache.stats().storage
    assert stats is not None and stats.events_dropped == 0
    made.cache.close()
