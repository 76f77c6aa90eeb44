"""Reuse through the host tier changes nothing: with a device pool too small to keep what
the workload reuses, most reused prefixes are copied back from host memory (real bytes,
through a NumpyCopyEngine), and every logits row is still bitwise equal to the uncached
run — for every supported component combination, page sizes 1 and 16, each write policy,
copies landing at once or after a random delay of up to 3 polls (out of order), and copies
that fail."""

from __future__ import annotations

import pytest

from radixkv.host import NumpyCopyConfig
from radixkv.model import VerifyReport, verify

from .host_support import DEVICE, WRITE_POLICIES, host_cache, host_workload
from .support import COMBOS, PAGES, combo_id, model_reference, small_cache

MIN_HOST_SHARE = {"write_through": 0.45, "write_back": 0.45, "write_through_selective": 0.25}
"""Share of reused tokens that came from host memory. write_through backs a prefix up as
soon as it is cached and write_back as its device copy is evicted: either way host memory
holds every prefix the tiny device pool lost, and the runs reach 0.49-0.71.
write_through_selective backs a prefix up only at its first reuse, and in a pool this
small most prefixes are evicted before any reuse, so only those reused once while still
on device (system prompts, few-shot examples) can come back: the runs reach 0.30-0.38."""

DELAYS = [NumpyCopyConfig(), NumpyCopyConfig(delay_polls=3, seed=7)]


def _failures(report: VerifyReport) -> list[str]:
    return [f"{group.group}: {group.mismatches}" for group in report.groups if not group.passed]


def _run(combo: tuple[str, ...], page: int, policy: str,
         copies: NumpyCopyConfig) -> VerifyReport:
    return verify(model_reference(combo), host_cache(combo, page, policy), host_workload(),
                  chunk=20, max_running=3, copies=copies)


@pytest.mark.parametrize("copies", DELAYS, ids=["at-once", "delayed"])
@pytest.mark.parametrize("policy", WRITE_POLICIES)
@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", COMBOS, ids=combo_id)
def test_reuse_from_host_memory_is_bitwise_exact(
    combo: tuple[str, ...], page: int, policy: str, copies: NumpyCopyConfig
) -> None:
    report = _run(combo, page, policy, copies)
    assert report.passed, _failures(report)
    host = report.host
    assert host is not None
    assert report.host_share >= MIN_HOST_SHARE[policy], report.host_share
    assert report.reuse_share >= 0.4
    assert report.evicted["full"] > 2 * DEVICE
    for name, component in host.components.items():
        # every component's KV (or state) went to host memory and came back from it
        assert component.backed_up > 0 and component.loaded > 0, name
    assert host.failed_loads == host.failed_backups == 0
    if copies.delay_polls:
        assert report.engine.load_waits > 0  # requests really waited for their copies


@pytest.mark.parametrize("page", PAGES)
def test_the_host_tier_serves_reuse_the_device_pool_alone_cannot(page: int) -> None:
    combo = COMBOS[-1]
    alone = verify(model_reference(combo), small_cache(combo, page, capacity=DEVICE,
                   swa_capacity=DEVICE, chunked_capacity=DEVICE, states=12), host_workload(),
                   chunk=20, max_running=3)
    with_host = _run(combo, page, "write_through", DELAYS[0])
    assert alone.passed and with_host.passed
    assert alone.host is None and alone.host_share == 0.0
    assert with_host.reuse_share > alone.reuse_share + 0.2


@pytest.mark.parametrize("policy", WRITE_POLICIES)
@pytest.mark.parametrize("page", PAGES)
def test_failed_copies_are_retried_and_stay_exact(page: int, policy: str) -> None:
    """A quarter of the copy batches fail: a request whose load-back failed is admitted
    again, a failed backup leaves the prefix device-only; nothing read is ever stale."""
    copies = NumpyCopyConfig(delay_polls=2, seed=3, failure_rate=0.25)
    report = _run(COMBOS[-1], page, policy, copies)
    assert report.passed, _failures(report)
    host = report.host
    assert host is not None
    assert host.failed_loads > 0 and report.engine.failed_loads > 0
    assert report.host_share >= 0.2
