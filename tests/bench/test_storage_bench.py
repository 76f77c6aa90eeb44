"""Smoke tests of ``radixkv bench storage`` at small sizes, on each store (a redis-server
and a Mooncake cluster the bench starts and stops itself): the command runs, prints its
table and writes JSON; engine 2 restores from it what engine
1 wrote (rows checked with --verify), and the control engine without L3 does not.
Timings are never asserted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from radixkv.bench.storage_run import redis_address
from radixkv.cli import main
from radixkv.storage.servers import missing

NEEDS = {"file": None, "redis": "redis-server", "mooncake": "mooncake_master"}


def bench(tmp_path: Path, *options: str) -> dict[str, Any]:
    out = tmp_path / "storage.json"
    code = main(["bench", "storage", "--num-seqs", "30", "--verify", "--progress-every", "0",
                 "--json", str(out), *options])
    assert code == 0
    loaded: dict[str, Any] = json.loads(out.read_text())
    return loaded


@pytest.mark.parametrize("kind", sorted(NEEDS))
def test_a_second_engine_restores_what_the_first_wrote(
        tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    program = NEEDS[kind]
    reason = None if program is None else missing(program)
    if reason is not None:
        pytest.skip(reason)
    first, second, control = bench(tmp_path, "--store", kind)["runs"]
    assert [r["name"] for r in (first, second, control)] == [
        "engine 1", "engine 2", "engine 2 without L3"]
    assert first["storage"]["written_pages"] > 0 and first["storage"]["faults"] == 0
    restored = second["storage"]["restored_tokens"]
    assert restored > 0 and second["storage"]["read_bytes"] > 0
    assert second["storage"]["faults"] == 0
    assert control["storage"] == {}
    assert second["prompt_tokens"] == control["prompt_tokens"] == first["prompt_tokens"]
    assert second["hit_tokens"] > control["hit_tokens"]
    assert second["computed_tokens"] == second["prompt_tokens"] - second["hit_tokens"]
    table = capsys.readouterr().out
    assert f"{restored:,} of {second['prompt_tokens']:,} prompt tokens restored" in table


def test_the_rest_of_the_workload_shares_prefixes_with_the_first_part(tmp_path: Path) -> None:
    first, second, control = bench(tmp_path, "--second", "rest")["runs"]
    assert first["requests"] + second["requests"] == 31
    assert second["requests"] == control["requests"]
    assert second["storage"]["restored_tokens"] > 0


def test_redis_addresses_are_read_from_urls_and_paths() -> None:
    assert redis_address("/run/redis.sock") == {"unix_socket": "/run/redis.sock"}
    assert redis_address("unix:///run/redis.sock") == {"unix_socket": "/run/redis.sock"}
    assert redis_address("redis://:pw@cache:6380/2") == {
        "host": "cache", "port": 6380, "db": 2, "password": "pw"}
    with pytest.raises(ValueError):
        redis_address("http://cache")


def test_a_mooncake_trace_slice_can_be_the_workload(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    lines = [{"timestamp": 0, "input_length": 1100, "output_length": 4, "hash_ids": [0, 1, 2]},
             {"timestamp": 5, "input_length": 1500, "output_length": 4, "hash_ids": [0, 1, 3]},
             {"timestamp": 9, "input_length": 600, "output_length": 4, "hash_ids": [0, 4]},
             {"timestamp": 9, "input_length": 600, "output_length": 4, "hash_ids": [9, 9]}]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    document = bench(tmp_path, "--trace", str(trace), "--limit", "3")
    first, second, control = document["runs"]
    assert document["workload"] == "trace.jsonl, first 3"
    assert first["requests"] == 3 and first["prompt_tokens"] == 1100 + 1500 + 600
    assert second["storage"]["restored_tokens"] > 0
    assert second["hit_tokens"] > control["hit_tokens"]
