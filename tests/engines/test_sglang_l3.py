"""Two real SGLang engines share radixkv's L3 on a real Redis (issue #31 item 5, the L3 half):
the second engine restores what the first wrote, and its outputs stay exact.

Both engines run ``--radix-cache-backend radixkv`` with a host tier and L3
(``RADIXKV_SGLANG_HOST_TOKENS``, ``RADIXKV_SGLANG_STORAGE=redis+unix://...``, a prefetch
threshold of one page, ``wait_complete``) on one ``redis-server`` the test starts on a unix
socket, and SGLang's strict memory checks. The first engine runs the multi-turn workload
from a cold store and writes every page it caches (write-through: host backup, then L3); once
Redis holds a steady number of pages it is shut down. The second engine, started cold (empty
device and host), runs the same workload:

- every greedy token equals the no-cache run and every logprob is within 1e-5;
- in its first turn every request reuses more than the first engine did, and more than the
  shared system prompt: those tokens can only have come from Redis;
- negative control: a third engine whose load-backs write wrong KV rows
  (``RADIXKV_SGLANG_NEGATIVE_CONTROL=load``) reuses as much and gives other outputs, which
  proves the comparison sees the bytes restored from L3.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from radixkv.storage.servers import RedisServer, missing

from .harness import ENGINE_SKIP_REASON
from .test_sglang_baseline import BASELINES
from .test_sglang_radixkv import STRICT
from .workload import SYSTEM_LEN, Run, assert_same

pytest.importorskip("sglang", reason=ENGINE_SKIP_REASON)
pytest.importorskip("sgl_kernel", reason=ENGINE_SKIP_REASON)
if importlib.util.find_spec("redis") is None:
    pytest.skip("the redis client is missing from .venv-sglang: `make engines-sglang`",
                allow_module_level=True)
if missing("redis-server"):
    pytest.skip(str(missing("redis-server")), allow_module_level=True)

PREFIX = "fleet"
HOST_TOKENS = 8192
QUIET_READS = 3         # Redis's page count unchanged over this many reads...
QUIET_GAP_S = 0.5       # ...this far apart: the first engine's puts have landed
SETTLE_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def redis_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.socket
    server.stop()


def l3_env(socket: str, page_size: int, negative: bool = False) -> dict[str, str]:
    env = {**STRICT, "RADIXKV_SGLANG_HOST_TOKENS": str(HOST_TOKENS),
           "RADIXKV_SGLANG_STORAGE": f"redis+unix://{socket}",
           "RADIXKV_SGLANG_STORAGE_PREFIX": PREFIX,
           "RADIXKV_SGLANG_PREFETCH_THRESHOLD": str(page_size),
           "RADIXKV_SGLANG_STORAGE_WAIT": "wait_complete"}
    if negative:
        env["RADIXKV_SGLANG_NEGATIVE_CONTROL"] = "load"
    return env


def stored_pages(socket: str) -> int:
    import redis

    client = redis.Redis(unix_socket_path=socket)
    try:
        return sum(1 for _ in client.scan_iter(match=f"{PREFIX}:m:*", count=1000))
    finally:
        client.close()


def settled_pages(socket: str) -> int:
    """Redis's page count once it stopped changing (the first engine's puts landed)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    counts = [stored_pages(socket)]
    while time.monotonic() < deadline:
        time.sleep(QUIET_GAP_S)
        counts.append(stored_pages(socket))
        last = counts[-QUIET_READS:]
        if len(last) == QUIET_READS and len(set(last)) == 1 and last[0] > 0:
            return last[0]
    raise AssertionError(f"Redis's page count never settled: {counts[-10:]}")


@pytest.fixture(scope="module", params=[1, 4], ids=lambda p: f"page{p}")
def runs(request: pytest.FixtureRequest, redis_socket: str,
         workload_run: Callable[..., tuple[Run, str]]) -> dict[str, Any]:
    page: int = request.param
    out: dict[str, Any] = {"page_size": page}
    out["no_cache"], _ = workload_run("no_cache", page, **BASELINES["no_cache"])
    out["first"], out["first_log"] = workload_run(
        "l3_first", page, radix_cache_backend="radixkv", env=l3_env(redis_socket, page))
    out["pages"] = settled_pages(redis_socket)
    out["second"], out["second_log"] = workload_run(
        "l3_second", page, radix_cache_backend="radixkv", env=l3_env(redis_socket, page))
    # last on this store at this page size: its wrong KV poisons what it writes
    out["negative"], _ = workload_run("l3_negative", page, radix_cache_backend="radixkv",
                                      env=l3_env(redis_socket, page, negative=True))
    return out


def test_the_second_engine_gives_the_tokens_and_logprobs_of_no_cache(
        runs: dict[str, Any]) -> None:
    ref = runs["no_cache"]
    for name in ("first", "second"):
        run = runs[name]
        for turn, (a, b) in enumerate(zip(ref.results, run.results)):
            assert ref.prompts[turn] == run.prompts[turn]
            assert_same(a, b, f"L3 {name}, page {runs['page_size']}, turn {turn}")
        assert_same(ref.control, run.control, f"L3 {name}, page {runs['page_size']}, control")


def test_the_second_engine_restores_from_redis_what_the_first_wrote(
        runs: dict[str, Any]) -> None:
    first, second = runs["first"].results[0], runs["second"].results[0]
    assert runs["pages"] > 0
    for index, (cold, warm) in enumerate(zip(first, second)):
        assert warm.cached_tokens > max(cold.cached_tokens, SYSTEM_LEN), (
            f"request {index} of the first turn: {warm.cached_tokens} tokens reused by the "
            f"second engine, {cold.cached_tokens} by the first")
    assert "source=registered('radixkv')" in runs["second_log"]
    print(f"\nL3, page {runs['page_size']}: {runs['pages']} pages in Redis; first-turn "
          f"cached tokens, first engine {[r.cached_tokens for r in first]}, second "
          f"{[r.cached_tokens for r in second]}, prompts {[r.prompt_tokens for r in second]}")


def test_negative_control_wrong_restored_rows_change_the_outputs(
        runs: dict[str, Any]) -> None:
    ref, bad = runs["no_cache"], runs["negative"]
    reused = sum(r.cached_tokens for r in bad.results[0])
    assert reused == sum(r.cached_tokens for r in runs["second"].results[0])
    outputs = [r.output_ids for turn in bad.results for r in turn]
    expected = [r.output_ids for turn in ref.results for r in turn]
    assert outputs != expected, "wrong KV restored from L3 went unseen"
