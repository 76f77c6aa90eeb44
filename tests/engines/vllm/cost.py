"""What radixkv's KV connector costs inside a real vLLM engine on CPU: the seconds its
scheduler side and its row copies take per engine step, and the workload's wall time with
radixkv, with vLLM's own prefix cache and with none, rounds alternating.

    make engines-vllm
    VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 \\
        .venv-vllm/bin/python -m tests.engines.vllm.cost --rounds 2 --json out.json

The workload is SGLang's cost workload (``tests/engines/cost.py``): conversations after 4
shared 128-token system prompts, turns of 16-32 new tokens, 16 tokens generated each. The
runs must agree on every greedy token.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ..checkpoint import write_checkpoint
from ..cost import conversations, run
from .engine import VLLMEngine

CACHES: dict[str, dict[str, Any]] = {
    "none": {},
    "vllm": {"enable_prefix_caching": True},
    "radixkv": {"radixkv": True},
}


def one(model: Path, name: str, blocks: int, chats: list[list[list[int]]],
        new_tokens: int) -> dict[str, Any]:
    with VLLMEngine(model, num_gpu_blocks_override=blocks, **CACHES[name]) as engine:
        start = time.perf_counter()
        results = run(engine, chats, new_tokens)  # type: ignore[arg-type]
        wall = time.perf_counter() - start
        stats = engine.stats()
    out: dict[str, Any] = {"wall_s": wall, "outputs": [r[0] for r in results],
                           "cached_tokens": sum(r[1] for r in results)}
    if "counters" in stats:
        steps = stats["counters"]["steps"]
        copies = stats["worker_seconds"]
        out.update(steps=steps, scheduler_us_per_step=1e6 * stats["scheduler_seconds"] / steps,
                   load_us_per_step=1e6 * copies["load"] / steps,
                   save_us_per_step=1e6 * copies["save"] / steps)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--conversations", type=int, default=24)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--blocks", type=int, default=128, help="KV blocks of 32 tokens")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    chats = conversations(args.conversations, args.turns + 1)
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        model = write_checkpoint(Path(scratch) / "model", seed=0)
        for index in range(args.rounds):
            order = list(CACHES) if index % 2 == 0 else list(reversed(CACHES))
            done = {name: one(model, name, args.blocks, chats, args.new_tokens)
                    for name in order}
            outputs = {name: done[name].pop("outputs") for name in done}
            assert outputs["radixkv"] == outputs["none"] == outputs["vllm"], "outputs differ"
            rounds.append(done)
            print(json.dumps(done, indent=1), flush=True)
    radixkv = [r["radixkv"] for r in rounds]
    summary = {key: statistics.median(r[key] for r in radixkv)
               for key in ("scheduler_us_per_step", "load_us_per_step", "save_us_per_step")}
    for name in CACHES:
        summary[f"{name}_wall_s"] = statistics.median(r[name]["wall_s"] for r in rounds)
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "rounds": rounds, "median": summary}, indent=1))


if __name__ == "__main__":
    main()
