"""Two real vLLM engines share radixkv's L3 on a real Redis (issue #35 item 4): the second
restores what the first wrote, and its outputs stay exact.

Both engines run the connector with a host tier and L3 (``host_tokens``, ``storage=
redis+unix://...``, a prefetch threshold of one page, ``wait_complete``) on one
``redis-server`` the test starts on a unix socket, vLLM's own prefix caching off. The first
engine runs the multi-turn workload from a cold store and writes every page it caches
(write-through: host backup, then L3); its cache is closed (its writes settle) and it is
shut down. The second engine, started cold (empty rows and host), runs the same workload:

- every greedy token equals the no-cache run and every logprob is within 1e-5;
- its very first request reuses tokens, where the first engine's reused none: they can only
  have come from Redis (its restorer counts them);
- negative control: a third engine whose restores write wrong rows
  (``RADIXKV_VLLM_NEGATIVE_CONTROL=restore``) gives other outputs, which proves the
  comparison sees the bytes restored from L3.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from radixkv.integrations.vllm import NEGATIVE_CONTROL_ENV
from radixkv.storage.servers import RedisServer, missing

from ..workload import Run, assert_same, make_workload, run_workload
from .engine import BLOCK_SIZE, VLLM_SKIP_REASON, VLLMEngine
from .test_vllm_connector import results

pytest.importorskip("vllm", reason=VLLM_SKIP_REASON)
if importlib.util.find_spec("redis") is None:
    pytest.skip("the redis client is missing from .venv-vllm: `make engines-vllm`",
                allow_module_level=True)
if missing("redis-server"):
    pytest.skip(str(missing("redis-server")), allow_module_level=True)

PREFIX = "fleet"


def stored_pages(socket: str) -> int:
    """Pages in Redis under ``PREFIX`` (their markers, written after the data)."""
    import redis

    client = redis.Redis(unix_socket_path=socket)
    try:
        return sum(1 for _ in client.scan_iter(match=f"{PREFIX}:m:*", count=1000))
    finally:
        client.close()


@pytest.fixture(scope="module")
def redis_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.socket
    server.stop()


def l3_run(model: Path, logs: Path, socket: str, negative: bool = False
           ) -> tuple[Run, dict[str, Any]]:
    extra = {"host_tokens": 8192, "storage": f"redis+unix://{socket}", "storage_prefix": PREFIX,
             "prefetch_threshold": BLOCK_SIZE, "storage_wait": "wait_complete"}
    env = {NEGATIVE_CONTROL_ENV: "restore"} if negative else {}
    with VLLMEngine(model, radixkv=True, connector_extra=extra, env=env,
                    log_dir=logs) as engine:
        run = run_workload(engine, make_workload())  # type: ignore[arg-type]
        stats = engine.stats()
        engine.close_cache()
    return run, stats


@pytest.fixture(scope="module")
def runs(vllm_checkpoint: Path, engine_logs: Path, redis_socket: str,
         vllm_run: Callable[[str], tuple[Run, dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {"none": vllm_run("none")[0]}
    out["first"] = l3_run(vllm_checkpoint, engine_logs, redis_socket)
    out["pages"] = stored_pages(redis_socket)  # the first engine's writes settled at close
    out["second"] = l3_run(vllm_checkpoint, engine_logs, redis_socket)
    out["negative"] = l3_run(vllm_checkpoint, engine_logs, redis_socket, negative=True)
    return out


def test_the_second_engine_gives_the_tokens_and_logprobs_of_no_cache(runs: dict[str, Any]
                                                                     ) -> None:
    assert runs["pages"] > 0
    assert_same(results(runs["none"]), results(runs["second"][0]), "second engine")
    assert_same(results(runs["none"]), results(runs["first"][0]), "first engine")


def test_the_second_engine_restores_from_redis_what_the_first_wrote(runs: dict[str, Any]
                                                                    ) -> None:
    first, first_stats = runs["first"]
    second, second_stats = runs["second"]
    print(f"\nRedis held {runs['pages']} pages; first turn's reuse: first engine "
          f"{[r.cached_tokens for r in first.results[0]]}, second engine "
          f"{[r.cached_tokens for r in second.results[0]]} of prompts of "
          f"{[len(p) for p in second.prompts[0]]} tokens; restored from host or L3: "
          f"{first_stats['restored']}, {second_stats['restored']}")
    assert first.results[0][0].cached_tokens == 0
    assert second.results[0][0].cached_tokens > 0
    assert second_stats["restored"]["restored_tokens"] > first_stats["restored"][
        "restored_tokens"]


def test_negative_control_wrong_restored_rows_change_the_outputs(runs: dict[str, Any]) -> None:
    negative, stats = runs["negative"]
    assert stats["restored"]["restored_tokens"] > 0
    with pytest.raises(AssertionError, match="differ"):
        assert_same(results(runs["none"]), results(negative), "negative control")
