"""The five timed operations of the benchmark spec (§5), each on a fresh cache."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .adapters import BenchCache
from .timing import Timing, time_items
from .workload import lock_targets, queries

OPS = ("insert", "match_prefix", "evict", "lock_unlock", "release")


@dataclass
class OpResult:
    """One operation's timing and the structural counts that show the inputs matched."""

    name: str
    timing: Timing
    counts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Workload:
    """The generated inputs, shared by every operation and every tree under test."""

    seqs: list[list[int]]
    num_seqs: int
    kv_size: int
    avg_tokens: int
    verify: bool = False


def _checker(cache: BenchCache, verify: bool, extra: Callable[[Any], None] | None = None
             ) -> Callable[[Any], None] | None:
    if not verify:
        return None

    def check(item: Any) -> None:
        if extra is not None:
            extra(item)
        cache.check()

    return check


def run_insert(make: Callable[[], BenchCache], work: Workload) -> OpResult:
    cache = make()
    warmup = min(20, work.num_seqs // 10)

    def inserted_fully(seq: list[int]) -> None:
        # the workload never skips a sequence (K exceeds any one): every whole page is cached
        assert cache.match(seq)[0] == len(seq) - len(seq) % cache.page_size

    timing = time_items(work.seqs, cache.insert_with_fallback, warmup,
                        work.num_seqs - warmup, work.avg_tokens,
                        _checker(cache, work.verify, inserted_fully))
    return OpResult("insert", timing)


def populated(make: Callable[[], BenchCache], work: Workload) -> tuple[BenchCache, int]:
    cache = make()
    count = work.num_seqs // 2
    for seq in work.seqs[:count]:
        cache.insert_with_fallback(seq)
    return cache, count


def run_match(make: Callable[[], BenchCache], work: Workload) -> OpResult:
    cache, count = populated(make, work)
    items, kinds = queries(work.seqs, count)
    warmup = min(20, len(items) // 10)
    timed = min(len(items) - warmup, work.num_seqs)
    timing = time_items(items, cache.match, warmup, timed, work.avg_tokens,
                        _checker(cache, work.verify))
    return OpResult("match_prefix", timing, {"query_kinds": kinds})


def run_evict(make: Callable[[], BenchCache], work: Workload) -> OpResult:
    cache = make()
    filled = 0
    for seq in work.seqs:
        if not cache.fill(seq):
            break
        filled += 1
    batch = max(100, work.kv_size // 200)
    calls = max(filled // 5, 100)
    warmup = min(20, calls // 10)
    timing = time_items([batch] * (calls + 50), cache.evict, warmup, calls - warmup, batch,
                        _checker(cache, work.verify))
    return OpResult("evict", timing, {"filled_seqs": filled})


def run_lock_unlock(make: Callable[[], BenchCache], work: Workload) -> OpResult:
    cache, count = populated(make, work)
    nodes = []
    for seq in work.seqs[:count]:
        _, node = cache.match(seq)
        if node is not None:
            nodes.append(node)
    pairs = min(2 * len(nodes), work.num_seqs)
    targets = lock_targets(nodes, pairs + 50)
    warmup = min(20, pairs // 10)
    timing = time_items(targets, cache.lock_unlock, warmup, pairs - warmup, 0,
                        _checker(cache, work.verify))
    return OpResult("lock_unlock", timing, {"distinct_nodes": len(set(map(str, nodes)))})


def run_release(make: Callable[[], BenchCache], work: Workload) -> OpResult:
    cache = make()
    requests = [r for r in map(cache.prepare_release, work.seqs) if r is not None]
    warmup = min(20, len(requests) // 10)
    timing = time_items(requests, cache.release, warmup, len(requests) - warmup,
                        work.avg_tokens, _checker(cache, work.verify))
    return OpResult("release", timing, {"prepared_reqs": len(requests)})


RUNNERS: dict[str, Callable[[Callable[[], BenchCache], Workload], OpResult]] = {
    "insert": run_insert,
    "match_prefix": run_match,
    "evict": run_evict,
    "lock_unlock": run_lock_unlock,
    "release": run_release,
}
