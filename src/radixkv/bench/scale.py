"""``radixkv bench scale``: match, lock and insert cost as the tree grows, and heap bytes per
token.

Match, lock and insert walk one path, so their cost should depend on path depth, not on how
many nodes the tree holds; this grows a tree from a thousand to a million nodes and times
them at each size (the lock: ``lock`` then ``unlock`` of the node a query matched, as a
request's admission and finish pin and release its prefix). Memory is Python heap bytes
(tracemalloc) per cached token for a tree built from the reference workload, whose
sequences hold 5.5M tokens.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TypeVar

from ..cache import CacheConfig, PrefixCache
from ..core.types import NodeId

T = TypeVar("T")


@dataclass(frozen=True)
class ScalePoint:
    """Median microseconds of one match, one lock + unlock of its node and one insert with
    ``nodes`` nodes in the tree, and the mean number of nodes on a matched path (what the
    cost should follow)."""

    nodes: int
    match_us: float
    insert_us: float
    path_nodes: float
    lock_us: float


@dataclass(frozen=True)
class MemoryPoint:
    """Heap bytes the tree took per cached token, at one page size."""

    page_size: int
    tokens: int
    nodes: int
    heap_bytes: int

    @property
    def bytes_per_token(self) -> float:
        return self.heap_bytes / self.tokens if self.tokens else 0.0


class _Grower:
    """Inserts sequences that branch off random cached ones, each adding one or two nodes.
    A sequence branches only off one at most ``max_depth - 1`` branchings deep, so paths stay
    as deep at a million nodes as at a thousand: what grows is the fan-out."""

    def __init__(self, cache: PrefixCache, seed: int, max_depth: int = 4) -> None:
        self.cache, self.rng, self.max_depth = cache, random.Random(seed), max_depth
        self.seqs: list[list[int]] = [[self.rng.randrange(1, 32000) for _ in range(16)]]
        self.bases: list[tuple[list[int], int]] = [(self.seqs[0], 1)]

    def next_seq(self) -> tuple[list[int], int]:
        rng = self.rng
        base, depth = rng.choice(self.bases)
        cut = rng.randrange(1, len(base) + 1)
        tail = [rng.randrange(1, 32000) for _ in range(rng.randrange(8, 33))]
        return base[:cut] + tail, depth + 1

    def insert(self, item: tuple[list[int], int]) -> None:
        seq, depth = item
        allocation = self.cache.allocate(len(seq))
        assert allocation is not None
        self.cache.insert(seq, allocation)
        self.seqs.append(seq)
        if depth < self.max_depth:
            self.bases.append((seq, depth))


def _median_us(items: list[T], op: Callable[[T], object]) -> float:
    times = []
    now = time.perf_counter
    for item in items:
        begin = now()
        op(item)
        times.append((now() - begin) * 1e6)
    return statistics.median(times)


def _path_nodes(cache: PrefixCache, seq: list[int]) -> int:
    node, count = cache.tree.node(cache.match(seq).node or 0), 0
    while node.parent is not None:
        node, count = node.parent, count + 1
    return count


def growth(sizes: tuple[int, ...], samples: int = 1000, seed: int = 7,
           progress: Callable[[int], None] | None = None, rounds: int = 3) -> list[ScalePoint]:
    """Grow a tree to each of ``sizes`` (node counts, each from ``seed``: a smaller tree is
    the early state of a larger one) and time ``samples`` matches of cached sequences and
    lock + unlock of their nodes on each; the trees take turns for ``rounds`` rounds, so
    the machine's changing speed falls on every size alike (medians over rounds). Then
    ``samples`` inserts of new sequences into each."""
    trees = [_grown(size, samples, seed, progress) for size in sizes]
    timings: list[tuple[list[float], list[float]]] = [([], []) for _ in trees]
    for _ in range(rounds):
        for (cache, _grower, queries, handles), (matches, locks) in zip(trees, timings):
            matches.append(_median_us(queries, cache.match))
            locks.append(_median_us(handles, _lock_unlock(cache)))
    points = []
    for (cache, grower, queries, _handles), (matches, locks) in zip(trees, timings):
        depth = statistics.mean(_path_nodes(cache, q) for q in queries)
        nodes = len(cache.tree.nodes)
        fresh = [grower.next_seq() for _ in range(samples)]
        points.append(ScalePoint(nodes, statistics.median(matches),
                                 _median_us(fresh, grower.insert), depth,
                                 statistics.median(locks)))
    return points


def _lock_unlock(cache: PrefixCache) -> Callable[[NodeId], None]:
    """Lock then unlock the whole path to a node of ``cache``."""
    def pin_and_release(node: NodeId) -> None:
        cache.unlock(cache.lock(node))
    return pin_and_release


def _grown(size: int, samples: int, seed: int, progress: Callable[[int], None] | None
           ) -> tuple[PrefixCache, _Grower, list[list[int]], list[NodeId]]:
    """A tree of ``size`` nodes (room for ``samples`` more sequences), its grower, queries
    of cached sequences and the handles of the nodes they match."""
    cache = PrefixCache(CacheConfig(capacity=64 * size + 64 * samples))
    grower = _Grower(cache, seed)
    while len(cache.tree.nodes) < size:
        grower.insert(grower.next_seq())
    if progress is not None:
        progress(len(cache.tree.nodes))
    queries = [grower.rng.choice(grower.seqs) for _ in range(samples)]
    handles = [node for node in (cache.match(q).node for q in queries) if node is not None]
    return cache, grower, queries, handles


def branching_sequences(tokens: int, seed: int = 11) -> list[list[int]]:
    """Sequences of 512–1536 fresh tokens appended to a random prefix of an earlier one,
    until the distinct tokens reach ``tokens``."""
    rng = random.Random(seed)
    seqs: list[list[int]] = [[rng.randrange(1, 32000) for _ in range(64)]]
    distinct = 64
    while distinct < tokens:
        base = rng.choice(seqs)
        tail = [rng.randrange(1, 32000) for _ in range(rng.randrange(512, 1537))]
        seqs.append(base[: rng.randrange(1, len(base) + 1)] + tail)
        distinct += len(tail)
    return seqs


def heap_per_token(page_size: int, tokens: int = 5_000_000) -> MemoryPoint:
    """Insert :func:`branching_sequences` and measure the Python heap the tree took: the
    sequences and the pools exist before tracing starts, so only the tree is counted."""
    seqs = branching_sequences(tokens)
    capacity = tokens + 4096 * page_size
    cache = PrefixCache(CacheConfig(capacity=capacity - capacity % page_size,
                                    page_size=page_size))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for seq in seqs:
            allocation = cache.allocate(len(seq))
            assert allocation is not None
            cache.insert(seq, allocation)
        heap = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    stats = cache.stats()
    return MemoryPoint(page_size, stats.components["full"].cached, stats.nodes, heap)


def run_scale(args: argparse.Namespace) -> int:
    """``radixkv bench scale``: print (and optionally write as JSON) both measurements."""
    def progress(nodes: int) -> None:
        print(f"  tree at {nodes:,} nodes ...", file=sys.stderr, flush=True)

    points = growth(tuple(sorted(args.sizes)), args.samples, progress=progress,
                    rounds=args.rounds)
    print(f"{'nodes':>10} {'path nodes':>11} {'match p50 µs':>13} {'µs/path node':>13} "
          f"{'lock+unlock p50 µs':>19} {'µs/path node':>13} {'insert p50 µs':>14}")
    for p in points:
        depth = max(p.path_nodes, 1)
        print(f"{p.nodes:>10,} {p.path_nodes:>11.1f} {p.match_us:>13.1f} "
              f"{p.match_us / depth:>13.2f} {p.lock_us:>19.1f} {p.lock_us / depth:>13.2f} "
              f"{p.insert_us:>14.1f}")
    if len(points) > 1:
        first, last = points[0], points[-1]
        growth_of = [(last_us / last.path_nodes) / (first_us / first.path_nodes)
                     for first_us, last_us in ((first.match_us, last.match_us),
                                               (first.lock_us, last.lock_us))]
        print(f"cost per path node at {last.nodes:,} nodes over {first.nodes:,}: match "
              f"{growth_of[0]:.2f}x, lock+unlock {growth_of[1]:.2f}x")
    memory = [heap_per_token(page, args.memory_tokens) for page in args.page_size]
    print(f"\n{'page':>5} {'tokens':>11} {'nodes':>8} {'heap MB':>9} {'bytes/token':>12}")
    for item in memory:
        print(f"{item.page_size:>5} {item.tokens:>11,} {item.nodes:>8,} "
              f"{item.heap_bytes / 2**20:>9.1f} {item.bytes_per_token:>12.2f}")
    if args.json is not None:
        rows = {"growth": [asdict(p) for p in points],
                "memory": [{**asdict(m), "bytes_per_token": m.bytes_per_token} for m in memory]}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0
