"""The reference benchmark workload of ``../shared/BENCH_WORKLOAD.md``, regenerated exactly.

Everything is drawn from CPython's ``random.Random`` (MT19937), in the documented order, so
the sequences and queries are bit-for-bit those the peers' benchmark uses; the SHA-256
reference values printed by ``radixkv bench ops`` let anyone check that.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

VOCAB = 32000
QUERY_VOCAB = 32000  # a literal in the spec, independent of VOCAB


@dataclass(frozen=True)
class WorkloadConfig:
    """Sizes of the workload (defaults are the spec's)."""

    num_seqs: int = 5000
    chunk_len: int = 256
    kv_size: int = 500_000
    vocab: int = VOCAB


def sequences(config: WorkloadConfig) -> list[list[int]]:
    """The N + 1 token sequences of spec §2 (chain growth, fan-out bursts, shuffle)."""
    rng = random.Random(42)
    n, c, v = config.num_seqs, config.chunk_len, config.vocab
    pool = [[rng.randint(1, v) for _ in range(max(1, c // 4))]]
    for _ in range(n // 2):
        parent = rng.choice(pool)
        token = rng.randint(1, v)
        pool.append(parent + [token] * rng.randint(1, c))
    left = n - n // 2
    while left > 0:
        fan = min(rng.randint(2, 10), left)
        parent = rng.choice(pool)
        for _ in range(fan):
            token = rng.randint(1, v)
            pool.append(parent + [token] * rng.randint(1, c))
        left -= fan
    rng.shuffle(pool)
    return pool


def queries(seqs: list[list[int]], populated: int) -> tuple[list[list[int]], dict[str, int]]:
    """The match_prefix queries of spec §3 and how many of each kind."""
    rng = random.Random(123)
    out: list[list[int]] = []
    kinds = {"exact": 0, "extended": 0, "miss": 0}
    for _ in range(len(seqs)):
        roll = rng.random()
        if roll < 0.33:
            out.append(seqs[rng.randint(0, populated - 1)])
            kinds["exact"] += 1
        elif roll < 0.66:
            base = seqs[rng.randint(0, populated - 1)]
            token = rng.randint(1, QUERY_VOCAB)
            out.append(base + [token] * rng.randint(10, 100))
            kinds["extended"] += 1
        else:
            token = rng.randint(1, QUERY_VOCAB)
            out.append([token] * rng.randint(50, 300))
            kinds["miss"] += 1
    return out, kinds


def lock_targets(nodes: list[T], count: int) -> list[T]:
    """The lock_unlock targets (spec §5.4): ``count`` draws of ``choice(nodes)`` from
    Random(99)."""
    rng = random.Random(99)
    return [rng.choice(nodes) for _ in range(count)]


def digest(seqs: list[list[int]]) -> str:
    """SHA-256 of the sequences as decimal text (spec §2 footnote)."""
    sha = hashlib.sha256()
    for seq in seqs:
        sha.update((",".join(map(str, seq)) + "\n").encode())
    return sha.hexdigest()
