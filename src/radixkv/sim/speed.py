"""``radixkv bench sim``: how many requests per second of wall time the simulator runs.

The workload is a chat (system prompt, multi-turn history) on one engine with a FULL cache;
every round builds a fresh simulator and cache, and starts from a collected heap (the
previous round's result, whose tree is cyclic garbage, is dropped and collected before the
round's clock starts, as ``timeit`` keeps the collector out of what it times; the round's
own end-of-run collection stays inside). Reported: the median over rounds of
requests per second of wall time and per second of this process's CPU time (the second does
not depend on what else runs on the machine), next to the simulated seconds they cover."""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from typing import Any

from .cluster import simulate
from .setup import Shape, parse_capacity
from .workloads import make_workload


def run_speed(args: argparse.Namespace) -> int:
    try:
        capacity = parse_capacity(args.capacity)
    except ValueError as exc:
        print(f"radixkv bench sim: error: {exc}", file=sys.stderr)
        return 1
    requests = make_workload("chat", sessions=args.sessions, turns=args.turns,
                             system_len=256, user_len=args.user_len,
                             output_len=args.output_len, rate=10.0, think=5.0)
    config = Shape(page_size=args.page_size).config(capacity, requests)
    prompt = sum(len(r.prompt) for r in requests)
    print(f"chat: {len(requests)} requests, {prompt / len(requests):.0f} prompt tokens "
          f"each on average, FULL cache of {config.engine.cache.capacity:,} tokens, "
          f"page {args.page_size}")
    rounds: list[dict[str, Any]] = []
    for number in range(1, args.rounds + 1):
        result = None
        gc.collect()
        cpu = time.process_time()
        result = simulate(requests, config)
        cpu = time.process_time() - cpu
        hits = sum(r.hit for r in result.records)
        rounds.append({"wall_s": result.wall_seconds, "cpu_s": cpu,
                       "sim_s": result.sim_seconds,
                       "requests_per_s": len(requests) / result.wall_seconds,
                       "requests_per_cpu_s": len(requests) / cpu,
                       "prompt_tokens_per_s": prompt / result.wall_seconds,
                       "hit_rate": hits / prompt})
        print(f"round {number}: {rounds[-1]['requests_per_s']:,.0f} requests/s "
              f"({result.wall_seconds:.2f} s wall, {cpu:.2f} s CPU, for "
              f"{result.sim_seconds:.0f} s simulated; hit rate {100 * hits / prompt:.1f}%)",
              flush=True)
    median = statistics.median(r["requests_per_s"] for r in rounds)
    per_cpu = statistics.median(r["requests_per_cpu_s"] for r in rounds)
    print(f"median: {median:,.0f} requests/s of wall time, {per_cpu:,.0f} per CPU second "
          f"(the two differ when other processes share the cores)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"requests": len(requests), "rounds": rounds,
                       "median_requests_per_s": median,
                       "median_requests_per_cpu_s": per_cpu}, out, indent=1)
    return 0
