"""Run the timed operations for one tree, one workload and one cache shape, and turn the
results into JSON-ready records (shared by ``radixkv bench ops`` and the peers worker)."""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .adapters import BenchCache, BenchShape, RadixKVCache
from .ops import OPS, RUNNERS, SHORT, OpResult, Workload, match_queries
from .short import ShortConfig, short_prompts
from .timing import Timing
from .workload import WorkloadConfig, digest, sequences

Record = dict[str, Any]


def make_workload(num_seqs: int, verify: bool = False, name: str = "reference") -> Workload:
    """The spec's sequences for ``num_seqs`` (defaults: chunk 256, K = 500000, V = 32000),
    with N + 100 request rows; or, for ``name`` ``"short"``, ``num_seqs`` short prompts
    (:mod:`radixkv.bench.short`) with as many rows as the pool can hold prompts, plus 100."""
    if name == SHORT:
        short = ShortConfig(prompts=num_seqs)
        seqs = short_prompts(short)
        kv_size = short.kv_size
        rows = min(num_seqs, kv_size // min(map(len, seqs))) + 100
    else:
        config = WorkloadConfig(num_seqs=num_seqs)
        seqs, kv_size, rows = sequences(config), config.kv_size, num_seqs + 100
    avg = sum(map(len, seqs)) // len(seqs)
    return Workload(seqs, num_seqs, kv_size, avg, verify, name, rows)


@dataclass(frozen=True)
class WorkloadSizes:
    """Which workloads a run generates, and their sizes: ``reference`` sequences N and
    ``short`` prompts; ``None`` leaves that workload out."""

    reference: int | None = 5000
    short: int | None = 20_000

    def named(self) -> dict[str, int]:
        sizes = {"reference": self.reference, SHORT: self.short}
        return {name: size for name, size in sizes.items() if size is not None}

    def argv(self) -> list[str]:
        """These sizes as the worker's command-line options."""
        return [arg for name, size in self.named().items() for arg in (f"--{name}", str(size))]


def make_workloads(sizes: WorkloadSizes, verify: bool = False) -> dict[str, Workload]:
    """Every workload ``sizes`` names, by name."""
    return {name: make_workload(size, verify, name) for name, size in sizes.named().items()}


def workload_info(work: Workload) -> Record:
    """The reference values of spec §2 and §3 (or the same figures for the short prompts),
    for anyone to check the inputs."""
    seqs = work.seqs
    items, kinds = match_queries(work, work.num_seqs // 2)
    return {
        "workload": work.name, "num_seqs": work.num_seqs, "sequences": len(seqs),
        "total_tokens": sum(map(len, seqs)), "longest": max(map(len, seqs)),
        "avg_tokens": work.avg_tokens, "first_len": len(seqs[0]),
        "root_tokens": seqs[0][:4],
        "sequences_sha256": digest(seqs),
        "queries": len(items), "query_kinds": kinds,
        "query_tokens": sum(map(len, items)), "queries_sha256": digest(items),
        "kv_size": work.kv_size,
    }


def latency_summary(timing: Timing) -> Record:
    ordered = sorted(timing.latencies_us)
    n = len(ordered)

    def at(q: float) -> float:
        return round(ordered[min(int(q * n), n - 1)], 3) if n else 0.0

    return {"min": at(0.0), "p10": at(0.1), "p50": round(timing.p50_us, 3) if n else 0.0,
            "p90": at(0.9), "p99": at(0.99), "max": ordered[-1] if n else 0.0,
            "stdev": round(statistics.pstdev(ordered), 3) if n else 0.0}


def op_record(result: OpResult, state: Record) -> Record:
    t = result.timing
    return {
        "op": result.name, "count": t.count, "wall_s": t.wall,
        "ops_per_s": t.ops_per_s, "p50_us": t.p50_us if t.count else 0.0,
        "p99_us": t.p99_us if t.count else 0.0, "mean_us": t.mean_us if t.count else 0.0,
        "tokens_per_s": t.tokens_per_s, "latency_us": latency_summary(t),
        "counts": result.counts, "end_state": state,
    }


def end_state(cache: Any) -> Record:
    """FULL tokens the tree holds and free FULL slots, after an operation (untimed)."""
    if isinstance(cache, RadixKVCache):
        stats = cache.cache.stats()
        return {"tree_tokens": stats.components["full"].cached, "free_slots": stats.available}
    state: Record = cache.state()
    return state


def bench_shape(components: str, page_size: int, work: Workload) -> BenchShape:
    """The cache of spec §4 for this workload: its K slots and request rows."""
    return BenchShape(components=components, page_size=page_size, kv_size=work.kv_size,
                      request_rows=work.request_rows)


def radixkv_factory(shape: BenchShape) -> Callable[[], BenchCache]:
    return lambda: RadixKVCache(shape)


def run_ops(factory: Callable[[], BenchCache], work: Workload, ops: tuple[str, ...] = OPS
            ) -> Iterator[Record]:
    """Each operation on its own fresh cache, in spec order; yields one record per op."""
    for name in ops:
        built: list[BenchCache] = []

        def make(built: list[BenchCache] = built) -> BenchCache:
            cache = factory()
            built.append(cache)
            return cache

        result = RUNNERS[name](make, work)
        state = end_state(built[-1])
        if work.verify:
            built[-1].check()
        built.clear()
        gc.collect()
        yield op_record(result, state)
