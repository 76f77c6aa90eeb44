"""The exactness check catches a broken cache, engine or model: each deliberately broken
variant below makes cached logits differ from the uncached run. (The same setups unbroken
pass: see test_exactness.py.)"""

from __future__ import annotations

import pytest

from radixkv.model import DEFAULT_LAYERS, VerifyReport, verify
from radixkv.model.reference import shared_reference

from .support import (
    CHUNK,
    CHUNKED_COMBOS,
    COMBOS,
    PAGES,
    WINDOW,
    LateSlideEngine,
    NoStateCopyEngine,
    PastChunkStartModel,
    combo_id,
    model_reference,
    small_cache,
    workload,
)

SWA_COMBOS = [combo for combo in COMBOS if "swa" in combo]
MAMBA_COMBOS = [combo for combo in COMBOS if "mamba" in combo]


def _failed_groups(report: VerifyReport) -> int:
    return sum(not group.passed for group in report.groups)


def _assert_caught(report: VerifyReport, share: float = 0.5) -> None:
    """Most groups differ, and the first difference is a real one."""
    assert not report.passed
    assert _failed_groups(report) >= share * len(report.groups)
    mismatch = next(group for group in report.groups if not group.passed).mismatches[0]
    assert mismatch.rows > 0 and mismatch.max_diff > 0


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", [SWA_COMBOS[0], SWA_COMBOS[-1]], ids=combo_id)
def test_a_cache_that_ignores_part_of_the_window_fails(combo: tuple[str, ...], page: int) -> None:
    """The cache keeps (and matches on) a window narrower than the model's: a prefix counts
    as usable although the oldest tokens the model attends to were dropped. At page size
    1 one token is enough; at 16 the window is rounded to pages, so narrow it by a page."""
    narrower = WINDOW - 1 if page == 1 else WINDOW - page // 4
    config = small_cache(combo, page, window=narrower)
    report = verify(model_reference(combo), config, workload(), chunk=20, max_running=3)
    _assert_caught(report)
    assert report.engine.window_misses > 0


@pytest.mark.parametrize(("combo", "page"), [(CHUNKED_COMBOS[0], 1), (CHUNKED_COMBOS[-1], 16)],
                         ids=["full+chunked-1", "all-16"])
def test_a_cache_with_shorter_chunks_than_the_model_fails(
    combo: tuple[str, ...], page: int
) -> None:
    """The cache's chunks are half the model's: it calls a prefix ending in the middle of a
    model chunk a chunk boundary (an empty window) and lets the first half be tombstoned."""
    config = small_cache(combo, page, chunk=CHUNK // 2)
    report = verify(model_reference(combo), config, workload(), chunk=20, max_running=3)
    _assert_caught(report)
    assert report.engine.window_misses > 0


@pytest.mark.parametrize("page", PAGES)
def test_chunked_layers_reading_one_token_before_their_chunk_fail(page: int) -> None:
    """A model whose chunked layers also read the token before their chunk start: the cache
    (chunks of the model's size) never lends that token's KV once a chunk is finished."""
    combo = CHUNKED_COMBOS[0]
    model = PastChunkStartModel(layers=DEFAULT_LAYERS[combo], window=WINDOW, chunk=CHUNK)
    report = verify(shared_reference(model), small_cache(combo, page), workload(),
                    chunk=20, max_running=3)
    _assert_caught(report)
    assert report.engine.window_misses > 0


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", [MAMBA_COMBOS[0], MAMBA_COMBOS[-1]], ids=combo_id)
def test_an_engine_that_skips_the_state_copy_fails(combo: tuple[str, ...], page: int) -> None:
    report = verify(model_reference(combo), small_cache(combo, page), workload(), chunk=20,
                    max_running=3, engine=NoStateCopyEngine)
    assert not report.passed
    assert _failed_groups(report) >= len(report.groups) // 2


@pytest.mark.parametrize("combo", [SWA_COMBOS[0], CHUNKED_COMBOS[0]], ids=combo_id)
def test_an_engine_that_slides_the_window_too_late_fails(combo: tuple[str, ...]) -> None:
    report = verify(model_reference(combo), small_cache(combo, 1), workload(), chunk=20,
                    max_running=3, engine=LateSlideEngine)
    assert not report.passed
    assert report.engine.window_misses > 0
