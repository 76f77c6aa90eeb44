"""The connector's scheduler side driven by a stand-in for vLLM (``fake_engine``), with KV
that is a function of each token's prefix: every position a forward reads must hold exactly
its prefix's KV, whether vLLM computed it or the connector loaded it from radixkv's rows.
The cache's invariants are checked after every call that may mutate it."""

from __future__ import annotations

import random

import pytest

from radixkv.integrations.vllm.scheduler import SchedulerSide

from ...audited import AuditedCache
from .fake_engine import FakeEngine, FakeRequest

BLOCK = 4


def engine(rows: int = 256, blocks: int = 64, page: int = BLOCK, budget: int = 64,
           negative: bool = False) -> FakeEngine:
    cache = AuditedCache(capacity=rows, page_size=page)
    side = SchedulerSide(cache, BLOCK, negative_control=negative)  # type: ignore[arg-type]
    return FakeEngine(side, blocks, rows, budget)


def prompt(seed: int, n: int, prefix: list[int] | None = None) -> list[int]:
    rng = random.Random(seed)
    head = list(prefix or [])
    return head + [rng.randrange(3, 500) for _ in range(n - len(head))]


def drained(fake: FakeEngine) -> None:
    assert fake.mismatches == 0
    assert fake.side.num_requests == 0
    assert not fake.side.cache.leases()


def test_a_second_request_loads_the_first_ones_prefix_exactly() -> None:
    fake = engine()
    first = FakeRequest("a", prompt(1, 30))
    fake.add(first)
    fake.run()
    second = FakeRequest("b", prompt(2, 40, first.prompt_token_ids[:22]))
    fake.add(second)
    fake.run()
    assert fake.cached == {"a": 0, "b": 20}  # whole pages of the shared 22 tokens
    assert fake.side.counters["loaded_tokens"] == 20
    drained(fake)


def test_decode_tokens_are_saved_and_reused() -> None:
    fake = engine()
    first = FakeRequest("a", prompt(1, 10), max_tokens=9)
    fake.add(first)
    fake.run()
    history = first.all_token_ids  # 10 prompt + 9 outputs; the KV of 18 was computed
    fake.add(FakeRequest("b", [*history, 7, 8]))
    fake.run()
    assert fake.cached["b"] == 16
    drained(fake)


def test_a_chunk_is_matchable_from_the_step_after_the_one_that_computed_it() -> None:
    fake = engine(budget=8)  # 8 tokens a step: a 40-token prompt takes 5 steps
    long = FakeRequest("a", prompt(1, 40))
    fake.add(long)
    probe = FakeRequest("b", [*long.prompt_token_ids[:20], 5, 6, 7, 8])
    for computed in (8, 16):
        fake.step()  # the rows of this step's chunk are written in this step
        assert long.num_computed_tokens == computed
        assert fake.side.matched(probe, 0) == computed
    fake.add(probe)
    fake.run()
    assert fake.cached["b"] == 20
    drained(fake)


def test_a_request_sharing_pages_with_one_admitted_in_its_step_waits_and_loads_them() -> None:
    fake = engine()
    same = prompt(1, 24)
    fake.add(FakeRequest("a", same), FakeRequest("b", [*same, 9]), FakeRequest("c", prompt(2, 8)))
    fake.step()
    assert {r.request_id for r in fake.running} == {"a", "c"}  # "b" waits, "c" goes ahead
    assert fake.side.counters["deferred"] == 1
    fake.run()
    assert fake.cached["b"] == 24
    drained(fake)


def test_pages_two_requests_compute_in_one_step_are_written_once() -> None:
    fake = engine(budget=16)  # "a" prefills 40 tokens in chunks of 16
    shared = prompt(1, 40)
    fake.add(FakeRequest("a", shared, max_tokens=1))
    fake.step()
    fake.add(FakeRequest("b", [*shared, 5], max_tokens=1))
    fake.run()  # "b" loads "a"'s first 32, then both compute tokens 32-39 in one step
    assert fake.cached["b"] == 32
    computed = 40 + 41 - 32  # every position "a" and "b" computed themselves
    assert fake.side.counters["saved_tokens"] == computed - 8  # the later commit wrote none
    drained(fake)


def test_preempted_requests_keep_what_they_computed_and_resume_exactly() -> None:
    fake = engine(blocks=12, budget=16)  # 48 slots for four 20-token requests that grow
    for index in range(4):
        fake.add(FakeRequest(f"r{index}", prompt(index, 20), max_tokens=10))
    fake.run()
    assert fake.preemptions > 0
    assert len(fake.finished) == 4
    drained(fake)


def test_without_free_rows_a_step_saves_nothing_and_a_later_one_catches_up() -> None:
    fake = engine(rows=16, budget=8)  # 16 rows: one running request's prompt fills them
    fake.add(FakeRequest("a", prompt(1, 12), max_tokens=8))
    fake.add(FakeRequest("b", prompt(2, 12), max_tokens=1))
    fake.run()
    assert fake.side.counters["unsaved_tokens"] > 0
    drained(fake)


def test_namespaces_never_share_rows() -> None:
    fake = engine()
    same = prompt(1, 24)
    fake.add(FakeRequest("a", same, cache_salt="tenant-1"))
    fake.run()
    fake.add(FakeRequest("b", [*same, 9], cache_salt="tenant-2"),
             FakeRequest("c", [*same, 9], cache_salt="tenant-1"))
    fake.run()
    assert fake.cached["b"] == 0 and fake.cached["c"] == 24
    drained(fake)


def test_multimodal_requests_are_neither_matched_nor_saved() -> None:
    fake = engine()
    same = prompt(1, 24)
    fake.add(FakeRequest("a", same, mm_features=["image"]))
    fake.run()
    fake.add(FakeRequest("b", [*same, 9]))
    fake.run()
    assert fake.cached["b"] == 0
    assert fake.side.counters["saved_tokens"] == 25 + 3  # "b"'s prompt and 3 decoded
    drained(fake)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("page", [2, 4])
def test_random_multi_turn_traffic_reads_exact_kv(seed: int, page: int) -> None:
    rng = random.Random(seed)
    fake = engine(rows=rng.choice([32, 64, 256]), blocks=rng.choice([16, 40]), page=page,
                  budget=rng.choice([8, 16, 64]))
    system = prompt(seed, 12)
    histories = [list(system) for _ in range(5)]
    for turn in range(3):
        for conv, history in enumerate(histories):
            history += prompt(100 * seed + 10 * turn + conv, rng.randint(2, 9))
            request = FakeRequest(f"{turn}-{conv}", list(history), max_tokens=rng.randint(1, 6),
                                  cache_salt=rng.choice([None, None, "t"]))
            fake.add(request)
        fake.run()
        for request in fake.finished[-5:]:
            histories[int(request.request_id.split("-")[1])] = list(request.all_token_ids)
    drained(fake)
    assert sum(fake.cached.values()) > 0


def test_negative_control_wrong_loaded_rows_are_seen() -> None:
    fake = engine(negative=True)
    first = FakeRequest("a", prompt(1, 30))
    fake.add(first)
    fake.run()
    fake.add(FakeRequest("b", [*first.prompt_token_ids[:22], 1, 2]))
    fake.run()
    assert fake.cached["b"] == 20
    assert fake.mismatches > 0
