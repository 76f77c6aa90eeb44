"""``radixkv bench scale``: match and insert cost as the tree grows, and heap bytes per token.

Match and insert walk one path, so their cost should depend on path depth, not on how many
nodes the tree holds; this grows a tree from a thousand to a million nodes and times both at
each size. Memory is Python heap bytes (tracemalloc) per cached token for a tree built from
the reference workload, whose sequences hold 5.5M tokens.
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

T = TypeVar("T")


@dataclass(frozen=True)
class ScalePoint:
    """Median microseconds of one match and one insert with ``nodes`` nodes in the tree, and
    the mean number of nodes on a matched path (what the cost should follow)."""

    nodes: int
    match_us: float
    insert_us: float
    path_nodes: float


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
           progress: Callable[[int], None] | None = None) -> list[ScalePoint]:
    """Grow one tree through ``sizes`` (node counts) and time ``samples`` matches of cached
    sequences and ``samples`` inserts of new ones at each."""
    cache = PrefixCache(CacheConfig(capacity=64 * max(sizes) + 64 * samples * len(sizes)))
    grower = _Grower(cache, seed)
    points = []
    for size in sizes:
        while len(cache.tree.nodes) < size:
            grower.insert(grower.next_seq())
        if progress is not None:
            progress(len(cache.tree.nodes))
        queries = [grower.rng.choice(grower.seqs) for _ in range(samples)]
        match_us = _median_us(queries, cache.match)
        depth = statistics.mean(_path_nodes(cache, q) for q in queries)
        fresh = [grower.next_seq() for _ in range(samples)]
        points.append(ScalePoint(len(cache.tree.nodes), match_us,
                                 _median_us(fresh, grower.insert), depth))
    return points


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

    points = growth(tuple(sorted(args.sizes)), args.samples, progress=progress)
    print(f"{'nodes':>10} {'path nodes':>11} {'match p50 µs':>13} {'µs/path node':>13} "
          f"{'insert p50 µs':>14}")
    for p in points:
        print(f"{p.nodes:>10,} {p.path_nodes:>11.1f} {p.match_us:>13.1f} "
              f"{p.match_us / max(p.path_nodes, 1):>13.2f} {p.insert_us:>14.1f}")
    memory = [heap_per_token(page, args.memory_tokens) for page in args.page_size]
    print(f"\n{'page':>5} {'tokens':>11} {'nodes':>8} {'heap MB':>9} {'bytes/token':>12}")
    for item in memory:
        print(f"{item.page_size:>5} {item.tokens:>11,} {item.nodes:>8,} "
              f"{item.heap_bytes / 2**20:>9.1f} {item.bytes_per_token:>12.2f}")
    if args.json is not None:
        rows = {"growth": [asdict(p) for p in points],
                "memory": [{**asdict(m), "bytes_per_token": m.bytes_per_token} for m in memory]}
        args.json.write_text(json.dumps(rows, indent=2))
    return 0
