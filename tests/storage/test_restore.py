"""The per-component hit rules of an L3 restore (radixkv.storage.restore)."""

from __future__ import annotations

from radixkv import CacheConfig, ChunkedLocal, PrefixCache
from radixkv.components.base import Component
from radixkv.storage.restore import best_cut, needed_pages

PAGE = 4


def components(**config: object) -> list[Component]:
    cache = PrefixCache(CacheConfig(capacity=256, page_size=PAGE, **config))  # type: ignore[arg-type]
    return cache.tree.components


def test_full_needs_every_page_of_the_restore() -> None:
    (full,) = components()
    assert needed_pages(full, 8, 32, PAGE) == (2, 8)


def test_a_window_component_needs_only_its_last_window() -> None:
    _full, swa = components(components=("full", "swa"), sliding_window=8)
    assert needed_pages(swa, 8, 32, PAGE) == (6, 8)
    # a window reaching back before the restore starts: the tree holds the rest
    assert needed_pages(swa, 28, 32, PAGE) == (7, 8)


def test_a_window_start_inside_a_page_takes_that_whole_page() -> None:
    _full, swa = components(components=("full", "swa"), sliding_window=6)
    assert needed_pages(swa, 0, 32, PAGE) == (6, 8)


def test_mamba_needs_its_state_at_the_cut() -> None:
    _full, mamba = components(components=("full", "mamba"), mamba_track_interval=PAGE)
    assert needed_pages(mamba, 8, 32, PAGE) == (7, 8)


def test_chunked_local_needs_the_pages_of_its_last_chunk() -> None:
    _full, chunked = components(components=("full", ChunkedLocal(chunk=8)))
    assert needed_pages(chunked, 0, 28, PAGE) == (6, 7)
    assert needed_pages(chunked, 0, 32, PAGE) == (8, 8)  # a chunk boundary needs nothing


def test_best_cut_is_the_primary_run_when_full_is_alone() -> None:
    (full,) = components()
    assert best_cut([full], 8, 32, PAGE, [[True] * 6]) == 32
    assert best_cut([full], 8, 32, PAGE, [[True, True, False, True, True, True]]) == 16


def test_best_cut_backs_off_to_where_the_window_is_whole() -> None:
    full, swa = components(components=("full", "swa"), sliding_window=8)
    present = [[True] * 8, [True, True, True, True, True, True, False, True]]
    # cut 32 needs SWA pages 6, 7 (6 missing); 28 needs 5, 6; 24 needs 4, 5
    assert best_cut([full, swa], 0, 32, PAGE, present) == 24


def test_best_cut_stops_only_where_mamba_has_a_state() -> None:
    full, mamba = components(components=("full", "mamba"), mamba_track_interval=PAGE)
    present = [[True] * 6, [False, True, False, False, True, False]]
    assert best_cut([full, mamba], 8, 32, PAGE, present) == 28
    assert best_cut([full, mamba], 8, 32, PAGE, [[True] * 6, [False] * 6]) is None


def test_best_cut_counts_short_flag_lists_as_absent() -> None:
    full, swa = components(components=("full", "swa"), sliding_window=8)
    assert best_cut([full, swa], 0, 32, PAGE, [[True] * 8, [True] * 5]) == 20
    assert best_cut([full], 0, 32, PAGE, [[]]) is None
