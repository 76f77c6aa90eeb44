"""The radix cache's cost inside a real SGLang engine: radixkv's backend against SGLang's own
cache (``UnifiedRadixCache`` on its Rust tree core), the same multi-turn workload on each,
rounds alternating, on CPU. ``cost_probe`` (preloaded into the scheduler) sums the seconds
of every cache call and counts the scheduler's steps; the result is cache seconds per step.

    make engines-sglang
    SGLANG_USE_CPU_ENGINE=1 .venv-sglang/bin/python -m tests.engines.cost --json out.json

Outputs also compared: the two caches must give the same greedy tokens and cached tokens.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from .checkpoint import VOCAB_SIZE, write_checkpoint
from .harness import EngineProcess

CACHES: dict[str, dict[str, Any]] = {"sglang": {}, "radixkv": {"radix_cache_backend": "radixkv"}}


def conversations(count: int, turns: int, seed: int = 7) -> list[list[list[int]]]:
    """``count`` conversations of ``turns`` user messages after one of 4 system prompts."""
    rng = random.Random(seed)
    systems = [[rng.randrange(3, VOCAB_SIZE) for _ in range(128)] for _ in range(4)]
    return [[systems[c % 4]] + [[rng.randrange(3, VOCAB_SIZE)
                                 for _ in range(rng.randint(16, 32))] for _ in range(turns)]
            for c in range(count)]


def run(engine: EngineProcess, chats: list[list[list[int]]], new_tokens: int) -> list[Any]:
    history = [list(chat[0]) for chat in chats]
    results = []
    for turn in range(1, len(chats[0])):
        prompts = [history[c] + chats[c][turn] for c in range(len(chats))]
        outs = engine.generate(prompts, max_new_tokens=new_tokens)
        for c, (prompt, out) in enumerate(zip(prompts, outs)):
            history[c] = prompt + out.output_ids
        results.extend((out.output_ids, out.cached_tokens) for out in outs)
    return results


def one(model: Path, name: str, page: int, pool: int, chats: list[list[list[int]]],
        new_tokens: int, scratch: Path) -> tuple[dict[str, list[float]], list[Any]]:
    out = scratch / f"{name}-probe.json"
    with EngineProcess(model, preload=["cost_probe"], env={"COST_PROBE_OUT": str(out)},
                       page_size=page, max_total_tokens=pool, **CACHES[name]) as engine:
        results = run(engine, chats, new_tokens)
    totals: dict[str, list[float]] = json.loads(out.read_text())
    return totals, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--page-size", type=int, default=1)
    parser.add_argument("--pool", type=int, default=4096, help="KV pool tokens (eviction)")
    parser.add_argument("--conversations", type=int, default=24)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    chats = conversations(args.conversations, args.turns)
    per_step: dict[str, list[float]] = {name: [] for name in CACHES}
    rows: dict[str, list[dict[str, list[float]]]] = {name: [] for name in CACHES}
    with tempfile.TemporaryDirectory() as tmp:
        model = write_checkpoint(Path(tmp) / "model", seed=0)
        outputs: dict[str, list[Any]] = {}
        for _ in range(args.rounds):
            for name in CACHES:
                totals, outputs[name] = one(model, name, args.page_size, args.pool, chats,
                                            args.new_tokens, Path(tmp))
                rows[name].append(totals)
                per_step[name].append(totals["cache"][1] / totals["steps"][0])
                print(f"{name:8} steps {int(totals['steps'][0]):5}  cache calls "
                      f"{int(totals['cache'][0]):6}  cache s/step "
                      f"{per_step[name][-1] * 1e6:8.1f} us", flush=True)
        same = outputs["sglang"] == outputs["radixkv"]
    medians = {name: statistics.median(values) for name, values in per_step.items()}
    ratio = medians["radixkv"] / medians["sglang"]
    print(f"median cache time per step: sglang {medians['sglang'] * 1e6:.1f} us, radixkv "
          f"{medians['radixkv'] * 1e6:.1f} us (radixkv / sglang {ratio:.2f}); same tokens "
          f"and cached tokens: {same}")
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "per_step_s": per_step, "rounds": rows,
                                         "same_outputs": same, "ratio": ratio}, indent=1))


if __name__ == "__main__":
    main()
