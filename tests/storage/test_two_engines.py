"""Two engines, one store: two caches of one model in two OS processes share a real Redis
or Mooncake store. The first serves a workload and writes its pages to L3; the second, a
fresh process and cache whose device and host pools hold far less than the workload reuses,
serves requests sharing those prefixes: it restores what the first wrote, and every logits
row of its requests is bitwise equal to the uncached run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from .servers import MooncakeCluster, RedisServer

ROOT = Path(__file__).resolve().parents[2]
MIN_SHARE = 0.3
"""Share of the second engine's prompt tokens restored from what the first wrote. Its
first turns and few-shot prompts are the first engine's, so most of its reuse is there
from the start: the runs reached 0.53-0.81 (Redis) and 0.54-0.67 (Mooncake), against
0.10-0.11 for the same workload alone on the store."""


def _engine(store: dict[str, Any], decode: int, **extra: str) -> dict[str, Any]:
    """Run one engine process on ``store``; its JSON report."""
    done = subprocess.run([sys.executable, "-m", "tests.storage.engine_process",
                           json.dumps({**store, "decode": decode, **extra})], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _two_engines(store: dict[str, Any]) -> dict[str, Any]:
    """The first engine, then the second; the second's workload is also run alone (its
    own key space on the same store: a model id no one else uses) to show what the
    first's pages added."""
    first = _engine(store, decode=6)
    assert first["passed"], first["failures"]
    assert first["written_pages"] > 0 and first["faults"] == 0
    second = _engine(store, decode=4)
    assert second["passed"], second["failures"]
    assert second["faults"] == 0
    assert second["restored_tokens"] > 0 and second["read_bytes"] > 0
    assert second["share"] >= MIN_SHARE, second
    alone = _engine(store, decode=4, name=f"alone-{uuid.uuid4().hex[:8]}")
    assert alone["passed"], alone["failures"]
    assert second["restored_tokens"] > alone["restored_tokens"] + 0.1 * second["prompt_tokens"]
    print(f"second engine: {second['restored_tokens']} of {second['prompt_tokens']} prompt "
          f"tokens ({second['share']:.0%}) restored from L3; alone on the store "
          f"{alone['restored_tokens']} ({alone['share']:.0%})")
    return second


def test_a_second_engine_on_redis_reuses_what_the_first_wrote_exactly(
    redis_server: RedisServer,
) -> None:
    _two_engines({"kind": "redis", "socket": redis_server.socket,
                  "prefix": f"two{uuid.uuid4().hex[:8]}"})


def test_a_second_engine_on_mooncake_reuses_what_the_first_wrote_exactly(
    mooncake_cluster: MooncakeCluster,
) -> None:
    _two_engines({"kind": "mooncake", "master": mooncake_cluster.master_address,
                  "metadata": mooncake_cluster.metadata_server})
