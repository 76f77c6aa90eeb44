"""The host-tier exactness check catches what goes wrong between the tiers: an engine that
reads a prefix before its load-back is acknowledged, a copy engine that drops one
component's load-backs, and one that backs up the wrong device rows each make cached logits
differ from the uncached run. (The same setups unbroken pass: test_host_exactness.py.)"""

from __future__ import annotations

import pytest

from radixkv.host import NumpyCopyConfig, NumpyCopyEngine
from radixkv.model import Engine, VerifyReport, verify

from .host_support import (
    EagerLoadEngine,
    ShiftedBackupEngine,
    dropping,
    host_cache,
    host_workload,
)
from .support import COMBOS, PAGES, combo_id, model_reference

ALL = COMBOS[-1]


def _caught(report: VerifyReport) -> None:
    """Cached logits differ from the uncached run in at least half the groups, while
    the host tier really served reuse (the check did not pass or fail by never loading)."""
    assert not report.passed
    failed = sum(not group.passed for group in report.groups)
    assert failed >= len(report.groups) / 2, failed
    mismatch = next(group for group in report.groups if not group.passed).mismatches[0]
    assert mismatch.rows > 0 and mismatch.max_diff > 0
    assert report.host is not None and report.host.host_hit_tokens > 0


def _run(combo: tuple[str, ...], page: int, copies: NumpyCopyConfig,
         engine: type[Engine] = Engine,
         copy_engine: type[NumpyCopyEngine] = NumpyCopyEngine) -> VerifyReport:
    return verify(model_reference(combo), host_cache(combo, page), host_workload(), chunk=20,
                  max_running=3, copies=copies, engine=engine, copy_engine=copy_engine)


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", [COMBOS[0], ALL], ids=combo_id)
def test_an_engine_that_reads_before_the_load_back_is_acknowledged_fails(
    combo: tuple[str, ...], page: int
) -> None:
    """Copies land two polls after their submission: the eager engine computes the first
    chunk from device slots the copy has not written yet."""
    report = _run(combo, page, NumpyCopyConfig(delay_polls=2), engine=EagerLoadEngine)
    _caught(report)


@pytest.mark.parametrize("component", ALL)
def test_a_copy_engine_that_drops_one_components_load_backs_fails(component: str) -> None:
    """Each component's host-to-device copies matter: FULL KV, SWA and chunked window KV,
    MAMBA states."""
    report = _run(ALL, 1, NumpyCopyConfig(), copy_engine=dropping(component))
    _caught(report)


@pytest.mark.parametrize("page", PAGES)
def test_a_copy_engine_that_backs_up_the_wrong_rows_fails(page: int) -> None:
    _caught(_run(ALL, page, NumpyCopyConfig(), copy_engine=ShiftedBackupEngine))


def test_the_unbroken_copy_engine_passes_the_same_setup() -> None:
    report = _run(ALL, 1, NumpyCopyConfig(), copy_engine=NumpyCopyEngine)
    assert report.passed
