"""The timed operations, each on a fresh cache: the five of the benchmark spec (§5) and
``admit_finish``, the whole life of a request whose prompt is fully cached (match, lock,
allocate what is left, insert, unlock)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .adapters import BenchCache
from .short import ShortConfig, short_queries
from .timing import Timing, time_items
from .workload import lock_targets, queries

SPEC_OPS = ("insert", "match_prefix", "evict", "lock_unlock", "release")
OPS = (*SPEC_OPS, "admit_finish")
REFERENCE, SHORT = "reference", "short"
WORKLOADS = (REFERENCE, SHORT)


@dataclass
class OpResult:
    """One operation's timing and the structural counts that show the inputs matched."""

    name: str
    timing: Timing
    counts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Workload:
    """The generated inputs, shared by every operation and every tree under test: the
    reference workload's sequences, or (``name`` ``"short"``) the short prompts of
    :mod:`radixkv.bench.short`. ``request_rows``: the request rows of the cache (spec §4)."""

    seqs: list[list[int]]
    num_seqs: int
    kv_size: int
    avg_tokens: int
    verify: bool = False
    name: str = REFERENCE
    request_rows: int = 5100


def match_queries(work: Workload, populated: int) -> tuple[list[list[int]], dict[str, int]]:
    """The match_prefix queries of ``work`` once ``populated`` sequences are cached."""
    if work.name == SHORT:
        return short_queries(work.seqs, populated, ShortConfig(prompts=work.num_seqs))
    return queries(work.seqs, populated)


def _checker(cache: BenchCache, verify: bool, extra: Callable[[Any], None] | None = None
             ) -> Callable[[Any], None] | None:
    if not verify:
        return None

    def check(item: Any) -> None:
        if extra is not None:
            extra(item)
        cache.check()

    return check


def _cached_whole(cache: BenchCache) -> Callable[[list[int]], None]:
    """A check that every whole page of a sequence is cached (the workloads never skip a
    sequence: K exceeds any one)."""
    def check(seq: list[int]) -> None:
        assert cache.match(seq)[0] == len(seq) - len(seq) % cache.page_size

    return check


def run_insert(make: Callable[[], BenchCache], work: Workload) -> OpResult:
    cache = make()
    warmup = min(20, work.num_seqs // 10)
    timing = time_items(work.seqs, cache.insert_with_fallback, warmup,
                        work.num_seqs - warmup, work.avg_tokens,
                        _checker(cache, work.verify, _cached_whole(cache)))
    return OpResult("insert", timing)


def populated(make: Callable[[], BenchCache], work: Workload) -> tuple[BenchCache, int]:
    cache = make()
    count = work.num_seqs // 2
    for seq in work.seqs[:count]:
        cache.insert_with_fallback(seq)
    return cache, count


def run_match(make: Callable[[], BenchCache], work: Workload) -> OpResult:
    cache, count = populated(make, work)
    items, kinds = match_queries(work, count)
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


def run_admit_finish(make: Callable[[], BenchCache], work: Workload) -> OpResult:
    cache, count = populated(make, work)
    items = work.seqs[:count]  # every one fully cached (whole pages)
    warmup = min(20, count // 10)
    timing = time_items(items, cache.admit_finish, warmup, count - warmup, work.avg_tokens,
                        _checker(cache, work.verify, _cached_whole(cache)))
    return OpResult("admit_finish", timing, {"cached_prompts": count})


RUNNERS: dict[str, Callable[[Callable[[], BenchCache], Workload], OpResult]] = {
    "insert": run_insert,
    "match_prefix": run_match,
    "evict": run_evict,
    "lock_unlock": run_lock_unlock,
    "release": run_release,
    "admit_finish": run_admit_finish,
}
