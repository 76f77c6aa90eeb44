"""Runs through the host tier that once broke the cache: each found by a seeded random sweep
of the exactness harness (combination, page size, write policy, pool sizes, copy delays and
failures), each the smallest setting that showed its bug. They must stay exact and keep
every invariant (the harness audits the cache after each request)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from radixkv.host import NumpyCopyConfig
from radixkv.model import verify

from .host_support import host_cache
from .support import model_reference, workload


class Case(NamedTuple):
    combo: tuple[str, ...]
    page: int
    policy: str
    device: int
    host: int
    host_states: int
    delay: int
    failures: float
    seed: int
    chunk: int
    running: int


CASES = {
    # a backup planned below a backup in flight that then failed
    "backup-on-backup": Case(("full", "chunked"), 16, "write_through", 256, 512, 4, 6, 0.4,
                             60, 20, 2),
    # a wait inside admit (write-back eviction) applied a failed load-back being lent
    "wait-in-admit": Case(("full", "chunked"), 4, "write_back", 160, 4096, 256, 3, 0.4, 64,
                          7, 2),
    # host eviction for a backup took the host value of an ancestor its plan rested on
    "host-eviction": Case(("full", "chunked"), 16, "write_back", 128, 128, 16, 0, 0.0, 19,
                          7, 3),
    # a load-back on a node being loaded beyond where the device match (MAMBA) ended
    "load-on-load": Case(("full", "chunked", "mamba"), 4, "write_back", 160, 4096, 256, 6,
                         0.1, 70, 7, 4),
    # a commit took over device values a load-back had not written yet (stale logits)
    "insert-on-load": Case(("full", "swa", "mamba"), 1, "write_back", 160, 4096, 256, 6,
                           0.0, 86, 20, 4),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_run_that_once_broke_the_host_tier_is_exact(case: Case) -> None:
    config = host_cache(case.combo, case.page, case.policy, capacity=case.device,
                        swa_capacity=case.device, chunked_capacity=case.device,
                        host_capacity=case.host, host_states=case.host_states)
    copies = NumpyCopyConfig(delay_polls=case.delay, seed=case.seed,
                             failure_rate=case.failures)
    report = verify(model_reference(case.combo), config,
                    workload(chats=3, families=2, seed=case.seed % 5), chunk=case.chunk,
                    max_running=case.running, copies=copies)
    assert report.passed
    assert report.host is not None and report.host.host_hit_tokens > 0
