"""L3 writes in order (issue #33 item 4): under the write_back host policy a node's path
reaches the store (and the STORAGE stream) before the node, so a prefix lookup finds it and
the stream names every parent first; ``close()`` writes what the host still holds. On any
policy, a page whose parent was never announced (its put failed) is not announced."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from radixkv import BlockStored
from radixkv.core.tiers import HOST
from radixkv.core.types import InFlight
from radixkv.storage import FileStorage, FileStorageConfig, PageRows

from .tier_support import Engine, engine, layouts, serve

HEAD = list(range(100, 132))  # 8 pages, shared
FIRST = [*HEAD, *range(200, 216)]  # + 4 pages
SECOND = [*HEAD, *range(300, 316)]  # + 4 pages
KEYS = layouts(("full",))[0]


def store(tmp_path: Path) -> FileStorage:
    return FileStorage(FileStorageConfig(root=tmp_path / "l3"))


def demoted(tmp_path: Path, **settings: object) -> Engine:
    """A write_back engine that served FIRST then SECOND, all of it demoted to the host
    (device eviction backs up: nothing is in L3 yet)."""
    made = engine(store(tmp_path), write_policy="write_back", events=True, **settings)
    serve(made, FIRST)
    serve(made, SECOND)
    made.cache.evict(full=10**6)
    made.cache.poll()
    made.audited()
    assert made.cache.stats().storage.queued_pages == 0  # type: ignore[union-attr]
    return made


def evict_host(made: Engine, tokens: int) -> None:
    host = made.cache.host
    assert host is not None
    host.evict_host([tokens])
    made.audited()


def stored_events(made: Engine) -> list[BlockStored]:
    storage = made.cache.storage
    assert storage is not None
    storage.settle()
    events = made.cache.take_storage_events()
    assert all(isinstance(event, BlockStored) for event in events)
    return events  # type: ignore[return-value]


def assert_parents_first(events: list[BlockStored]) -> None:
    named: set[int] = set()
    for event in events:
        assert event.parent_block_hash is None or event.parent_block_hash in named
        named.update(event.block_hashes)


def test_a_dropped_leaf_is_written_after_the_head_it_hangs_below(tmp_path: Path) -> None:
    """Host eviction takes one leaf (FIRST's tail, the least recent); the shared head stays
    hot on the host. Without its head in L3 the leaf is unreachable by a prefix lookup."""
    made = demoted(tmp_path)
    evict_host(made, 16)
    head, tail = stored_events(made)
    assert head.token_ids == HEAD and head.parent_block_hash is None
    assert tail.token_ids == FIRST[32:] and tail.parent_block_hash == head.block_hashes[-1]
    assert store(tmp_path).exists_prefix(KEYS.token_keys(FIRST)) == 12
    made.cache.close()


def test_the_head_is_written_once_and_not_again_when_it_drops(tmp_path: Path) -> None:
    made = demoted(tmp_path)
    evict_host(made, 10**6)  # both leaves, then the head
    events = stored_events(made)
    assert_parents_first(events)
    assert sorted(len(event.token_ids) for event in events) == [16, 16, 32]
    assert made.cache.stats().storage.queued_pages == 16  # type: ignore[union-attr]
    for tokens in (FIRST, SECOND):
        assert store(tmp_path).exists_prefix(KEYS.token_keys(tokens)) == 12
    made.cache.close()


def test_a_path_with_a_host_backup_in_flight_keeps_the_leaf_out(tmp_path: Path) -> None:
    """The head's host rows are not readable while a backup writes them: neither the head
    nor the leaf below it is written (a leaf alone could not be found)."""
    made = demoted(tmp_path)
    tree = made.cache.tree
    (head,) = next(iter(tree.roots.values())).children.values()
    tree.copying[head.id] = [InFlight(-1, HOST)]  # as a backup of the head would
    try:  # (the audit would name the record no controller holds: audited after)
        made.cache.host.evict_host([16])  # type: ignore[union-attr]
    finally:
        del tree.copying[head.id]
    made.audited()
    assert stored_events(made) == []
    assert made.cache.stats().storage.queued_pages == 0  # type: ignore[union-attr]
    made.cache.close()


def test_close_writes_what_the_host_holds_parents_first(tmp_path: Path) -> None:
    made = demoted(tmp_path)
    made.cache.close()
    made.audited()
    events = made.cache.take_storage_events()
    assert_parents_first(events)  # type: ignore[arg-type]
    assert sorted(len(event.token_ids) for event in events) == [16, 16, 32]  # type: ignore[attr-defined]
    for tokens in (FIRST, SECOND):
        assert store(tmp_path).exists_prefix(KEYS.token_keys(tokens)) == 12


def test_close_without_flush_on_close_writes_nothing(tmp_path: Path) -> None:
    made = demoted(tmp_path, flush_on_close=False)
    made.cache.close()
    assert made.cache.take_storage_events() == []
    assert store(tmp_path).exists_prefix(KEYS.token_keys(FIRST)) == 0


def test_what_came_from_l3_is_not_written_back(tmp_path: Path) -> None:
    first = demoted(tmp_path)
    first.cache.close()  # FIRST and SECOND are in the store
    second = engine(store(tmp_path), write_policy="write_back", events=True,
                    wait_policy="wait_complete")
    assert serve(second, FIRST) == 48
    second.cache.evict(full=10**6)
    evict_host(second, 10**6)
    second.cache.close()
    stats = second.cache.take_storage_events()
    assert [len(event.token_ids) for event in stats] == [48]  # type: ignore[attr-defined]


class Refusing(FileStorage):
    """A store that reports the puts of ``refused`` keys as failed."""

    def __init__(self, config: FileStorageConfig, refused: set[str]) -> None:
        super().__init__(config)
        self.refused = refused

    def put_from(self, keys: Sequence[str], rows: PageRows) -> list[bool]:
        flags = super().put_from(keys, rows)
        return [flag and key not in self.refused for key, flag in zip(keys, flags)]


def test_a_page_below_a_parent_whose_put_failed_is_not_announced(tmp_path: Path) -> None:
    """write_through: HEAD's last page is refused, FIRST's tail lands; announcing the tail
    would name a parent the stream never named (and a prefix lookup cannot reach it)."""
    backend = Refusing(FileStorageConfig(root=tmp_path / "l3"), {KEYS.token_keys(HEAD)[-1]})
    made = engine(backend, events=True)
    serve(made, HEAD)
    assert stored_events(made) == []
    serve(made, FIRST)
    assert stored_events(made) == []
    assert made.cache.stats().storage.written_pages == 11  # type: ignore[union-attr]
    other = list(range(400, 416))  # not below HEAD: announced
    serve(made, other)
    (event,) = stored_events(made)
    assert event.token_ids == other
    made.cache.close()
