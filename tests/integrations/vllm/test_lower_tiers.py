"""The connector's host tier and L3 below its rows, through the stand-in for vLLM
(``fake_engine``): a prefix evicted from the rows comes back from the host tier, a second
engine restores from a shared store what the first wrote, and every position a forward reads
holds exactly its prefix's KV. Negative control: restores that write wrong rows are seen.
Backups of rows the planned step still has to write wait until it has run."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from radixkv import CacheConfig, PrefixCache
from radixkv.host import Copy, Direction
from radixkv.integrations.restore import Restorer
from radixkv.integrations.vllm.host_copies import RowCopyEngine
from radixkv.integrations.vllm.lower_tiers import build_tiers
from radixkv.integrations.vllm.scheduler import SchedulerSide
from radixkv.integrations.vllm.settings import ConnectorSettings

from .fake_engine import FakeEngine, FakeRequest

BLOCK = 4


def tiered(rows: int, extra: dict[str, object], negative: bool = False) -> FakeEngine:
    settings = ConnectorSettings.from_extra({"capacity_tokens": rows, **extra}, BLOCK, rows)
    parts = build_tiers(settings, (), np.float64, "fake-model", negative_control=negative)
    assert parts is not None
    cache = PrefixCache(CacheConfig(capacity=settings.capacity, page_size=BLOCK,
                                    host=parts.host, storage=parts.storage),
                        parts.copy_engine, storage=parts.store)
    side = SchedulerSide(cache, BLOCK, copies=parts.copy_engine,
                         restorer=Restorer(cache, parts.storage is not None))
    fake = FakeEngine(side, 64, settings.capacity)
    parts.copy_engine.attach(fake.rows)
    return fake


def prompt(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(3, 500) for _ in range(n)]


def settled(fake: FakeEngine) -> None:
    fake.side.poll()
    fake.side.cache.check_invariants()
    assert fake.mismatches == 0 and fake.side.num_requests == 0


def test_a_prefix_evicted_from_the_rows_comes_back_from_the_host_tier() -> None:
    fake = tiered(24, {"host_tokens": 256})
    first = prompt(1, 20)
    fake.add(FakeRequest("a", first, max_tokens=1))
    fake.run()
    for index in range(3):  # other prompts push "a"'s pages out of the 24 rows
        fake.add(FakeRequest(f"o{index}", prompt(10 + index, 20), max_tokens=1))
        fake.run()
    assert fake.side.cache.match(first, None).length < 16  # no longer in the rows
    fake.add(FakeRequest("b", [*first, 7], max_tokens=1))
    fake.run()
    assert fake.cached["b"] == 20
    settled(fake)


def test_a_second_engine_restores_from_the_store_what_the_first_wrote(tmp_path: Path) -> None:
    extra = {"host_tokens": 256, "storage": f"file://{tmp_path}", "prefetch_threshold": 4}
    first = tiered(64, extra)
    shared = prompt(1, 30)
    first.add(FakeRequest("a", shared, max_tokens=1))
    first.run()
    first.side.close()
    second = tiered(64, extra)
    second.add(FakeRequest("b", [*shared, 7], max_tokens=1))
    second.run()
    assert second.cached["b"] == 28
    settled(second)
    second.side.close()


def test_negative_control_wrong_restored_rows_are_seen(tmp_path: Path) -> None:
    extra = {"host_tokens": 256, "storage": f"file://{tmp_path}", "prefetch_threshold": 4}
    first = tiered(64, extra)
    shared = prompt(1, 30)
    first.add(FakeRequest("a", shared, max_tokens=1))
    first.run()
    first.side.close()
    second = tiered(64, extra, negative=True)
    second.add(FakeRequest("b", [*shared, 7], max_tokens=1))
    second.run()
    assert second.cached["b"] == 28
    assert second.mismatches > 0
    second.side.close()


def test_a_backup_of_rows_the_step_writes_waits_until_it_ran() -> None:
    engine = RowCopyEngine(4, (), np.float64)
    device = np.arange(8, dtype=np.float64)
    engine.attach(device)
    engine.unwritten(np.array([2, 3]))
    held = engine.submit([Copy("full", Direction.TO_HOST, np.array([2, 3]), np.array([0, 1]))])
    free = engine.submit([Copy("full", Direction.TO_HOST, np.array([5]), np.array([2]))])
    assert [c.ticket for c in engine.poll()] == [free]
    assert engine.host.tolist() == [0, 0, 5, 0]
    engine.step_ran()
    assert [(c.ticket, c.ok) for c in engine.poll()] == [(held, True)]
    assert engine.host.tolist() == [2, 3, 5, 0]
