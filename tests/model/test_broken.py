"""The exactness check catches a broken cache or engine: each deliberately broken variant
below makes cached logits differ from the uncached run. (The same setups unbroken pass:
see test_exactness.py.)"""

from __future__ import annotations

import pytest

from radixkv.model import VerifyReport, verify

from .support import (
    PAGES,
    WINDOW,
    LateSlideEngine,
    NoStateCopyEngine,
    combo_id,
    model_reference,
    small_cache,
    workload,
)


def _failed_groups(report: VerifyReport) -> int:
    return sum(not group.passed for group in report.groups)


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", [("full", "swa"), ("full", "swa", "mamba")], ids=combo_id)
def test_a_cache_that_ignores_part_of_the_window_fails(combo: tuple[str, ...], page: int) -> None:
    """The cache keeps (and matches on) a window narrower than the model's: a prefix counts
    as usable although the oldest tokens the model attends to were dropped. At page size
    1 one token is enough; at 16 the window is rounded to pages, so narrow it by a page."""
    narrower = WINDOW - 1 if page == 1 else WINDOW - page // 4
    config = small_cache(combo, page, sliding_window=narrower)
    report = verify(model_reference(combo), config, workload(), chunk=20, max_running=3)
    assert not report.passed
    assert _failed_groups(report) >= len(report.groups) // 2
    assert report.engine.window_misses > 0
    mismatch = next(group for group in report.groups if not group.passed).mismatches[0]
    assert mismatch.rows > 0 and mismatch.max_diff > 0


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", [("full", "mamba"), ("full", "swa", "mamba")], ids=combo_id)
def test_an_engine_that_skips_the_state_copy_fails(combo: tuple[str, ...], page: int) -> None:
    report = verify(model_reference(combo), small_cache(combo, page), workload(), chunk=20,
                    max_running=3, engine=NoStateCopyEngine)
    assert not report.passed
    assert _failed_groups(report) >= len(report.groups) // 2


def test_an_engine_that_slides_the_window_too_late_fails() -> None:
    combo = ("full", "swa")
    report = verify(model_reference(combo), small_cache(combo, 1), workload(), chunk=20,
                    max_running=3, engine=LateSlideEngine)
    assert not report.passed
