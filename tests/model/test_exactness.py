"""Prefix reuse changes nothing: every logits row of a cached run is bitwise equal to the
uncached run of the same prompt, for every supported component combination (derived from
``radixkv.supported_combinations()``), at page sizes 1 and 16, with pools small enough that
eviction never stops, while the cache reuses a large share of the prompts (so the check
cannot pass by never hitting)."""

from __future__ import annotations

import pytest

import radixkv
from radixkv.cli import parse_verify
from radixkv.model import VerifyReport, command, verify

from .support import (
    CAPACITY,
    COMBOS,
    PAGES,
    combo_id,
    default_run,
    model_reference,
    small_cache,
    workload,
)

MIN_REUSE = 0.4
"""Share of prompt tokens served from the cache; the runs below reach 0.48-0.68."""

POLICIES = ["lru", "lfu", "fifo", "mru", "filo", "priority", "slru", "tlru"]
ALL = COMBOS[-1]
"""Every component at once."""


def _failures(report: VerifyReport) -> list[str]:
    return [f"{group.group}: {group.mismatches}" for group in report.groups if not group.passed]


def test_every_supported_combination_is_covered() -> None:
    built_in = {"full", "swa", "chunked", "mamba"}
    supported = [c for c in radixkv.supported_combinations() if set(c) <= built_in]
    assert supported == COMBOS
    assert len(COMBOS) == 8 and ALL == ("full", "swa", "chunked", "mamba")


def test_the_default_verify_run_has_the_workload_model_and_engine_of_these_tests() -> None:
    args = parse_verify([])
    assert args.page_size == PAGES and args.combo == ["all"]
    assert command.workload(args) == workload()
    for combo in COMBOS:
        assert command.model_config(args, combo) == model_reference(combo).decoder.config
    assert (args.chunk, args.max_running) == (20, 3)


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", COMBOS, ids=combo_id)
def test_cached_run_is_bitwise_equal_to_the_uncached_run(
    combo: tuple[str, ...], page: int
) -> None:
    """Read from the default ``radixkv verify`` run (``make demo``), whose configuration
    is the one these tests use throughout (checked first)."""
    config, report = default_run().runs[combo, page]
    assert config == small_cache(combo, page)
    assert report.passed, _failures(report)
    assert report.reuse_share >= MIN_REUSE
    assert sum(group.compared_rows for group in report.groups) > 1000
    assert report.engine.peak_running == 3  # requests really interleave
    assert report.engine.window_misses == 0
    # eviction never stops: the FULL pool turned over more than twice
    assert report.evicted["full"] > 2 * CAPACITY
    for spec in config.specs:
        name = spec.name
        assert report.reused[name] > 0, f"{name} never reused"
        assert report.evicted[name] > 0, f"{name} never evicted"
        if spec.windowed:
            # its own pool ran short (not only cascades from FULL) and left tombstones
            assert report.pressure[name] > 0, f"{name} never evicted for its own pool"
            assert report.tombstones[name] > 0, f"{name} never tombstoned"


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("kind", ["chat", "fewshot"])
def test_each_workload_alone_is_exact(kind: str, page: int) -> None:
    report = verify(model_reference(ALL), small_cache(ALL, page), workload(kind),
                    chunk=16, max_running=4)
    assert report.passed, _failures(report)
    assert report.reuse_share >= MIN_REUSE


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("policy", POLICIES)
def test_every_eviction_policy_is_exact(policy: str, page: int) -> None:
    """Every component at once, on half the workload with smaller pools (still turned over
    more than twice)."""
    config = small_cache(ALL, page, policy=policy, capacity=256, swa_capacity=160,
                         chunked_capacity=160)
    report = verify(model_reference(ALL), config, workload(chats=4, families=2), chunk=24,
                    max_running=3)
    assert report.passed, _failures(report)
    assert report.reuse_share >= 0.35
    assert report.evicted["full"] > 2 * 256
    assert report.tombstones["swa"] > 0 and report.tombstones["chunked"] > 0


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_chunk_size_does_not_matter(chunk: int) -> None:
    report = verify(model_reference(ALL), small_cache(ALL, 4), workload(),
                    chunk=chunk, max_running=2)
    assert report.passed, _failures(report)


@pytest.mark.parametrize("combo", COMBOS, ids=combo_id)
def test_preemption_under_a_tiny_pool_stays_exact(combo: tuple[str, ...]) -> None:
    """Pools so small that running requests run out of slots and get aborted and rerun."""
    config = small_cache(combo, 4, capacity=176, swa_capacity=176, chunked_capacity=176)
    report = verify(model_reference(combo), config, workload(), chunk=20, max_running=4)
    assert report.passed, _failures(report)
    assert report.engine.preemptions > 0
