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

from ..cache import CacheConfig, PrefixCache


@dataclass(frozen=True)
class ScalePoint:
    """Median microseconds of one match and one insert with ``nodes`` nodes in the tree."""

    nodes: int
    match_us: float
    insert_us: float


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
    """Inserts sequences that branch off random cached ones, each adding one or two nodes."""

    def __init__(self, cache: PrefixCache, seed: int) -> None:
        self.cache, self.rng = cache, random.Random(seed)
        self.seqs: list[list[int]] = [[self.rng.randrange(1, 32000) for _ in range(16)]]

    def next_seq(self) -> list[int]:
        rng, base = self.rng, self.rng.choice(self.seqs)
        cut = rng.randrange(1, len(base) + 1)
        return base[:cut] + [rng.randrange(1, 32000) for _ in range(rng.randrange(8, 33))]

    def insert(self, seq: list[int]) -> None:
        allocation = self.cache.allocate(len(seq))
        assert allocation is not None
        self.cache.insert(seq, allocation)
        self.seqs.append(seq)


def _median_us(items: list[list[int]], op: Callable[[list[int]], object]) -> float:
    times = []
    now = time.perf_counter
    for item in items:
        begin = now()
        op(item)
        times.append((now() - begin) * 1e6)
    return statistics.median(times)


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
        fresh = [grower.next_seq() for _ in range(samples)]
        points.append(ScalePoint(len(cache.tree.nodes), match_us,
                                 _median_us(fresh, grower.insert)))
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
    print(f"{'nodes':>10} {'match p50 µs':>13} {'insert p50 µs':>14}")
    for point in points:
        print(f"{point.nodes:>10,} {point.match_us:>13.1f} {point.insert_us:>14.1f}")
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
