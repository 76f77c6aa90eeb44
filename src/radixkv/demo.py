"""``radixkv demo``: a few dozen chat requests sharing system prompts, showing what is reused.

Until the reference model lands this is the main job ``make demo`` runs: it drives a small
PrefixCache through admit → extend (decode) → finish for multi-turn conversations that share
system prompts, under memory pressure, and prints per request how much of its prompt was
already cached.
"""

from __future__ import annotations

import random

import numpy as np

from .cache import CacheConfig, PrefixCache


def conversations(rng: random.Random, num_chats: int, turns: int) -> list[list[list[int]]]:
    """Prompts of each turn of each chat: a shared system prompt, then the growing dialogue."""
    systems = [[rng.randrange(1, 32000) for _ in range(rng.randrange(96, 160))] for _ in range(3)]
    chats = []
    for _ in range(num_chats):
        history = list(rng.choice(systems))
        prompts = []
        for _ in range(turns):
            history += [rng.randrange(1, 32000) for _ in range(rng.randrange(8, 40))]
            prompts.append(list(history))
            history += [rng.randrange(1, 32000) for _ in range(rng.randrange(8, 24))]
        chats.append(prompts)
    return chats


def main(seed: int = 7, num_chats: int = 12, turns: int = 3) -> int:
    """Run the demo; returns a process exit code."""
    rng = random.Random(seed)
    cache = PrefixCache(CacheConfig(capacity=2048, page_size=16, policy="lru"))
    order = [(chat, turn) for turn in range(turns) for chat in range(num_chats)]
    chats = conversations(rng, num_chats, turns)
    print(f"{'request':>10} {'prompt':>7} {'reused':>7}  reuse")
    for chat, turn in order:
        prompt = chats[chat][turn]
        lease = cache.admit(prompt)
        reused = lease.cached_length
        decoded = np.array([rng.randrange(1, 32000) for _ in range(16)], dtype=np.int64)
        cache.extend(lease, decoded)
        cache.finish(lease)
        cache.check_invariants()
        bar = "#" * round(20 * reused / len(prompt))
        print(f"{f'c{chat}/t{turn}':>10} {len(prompt):>7} {reused:>7}  {bar}")
    stats = cache.stats()
    print(
        f"\n{stats.admitted} requests, {stats.match_tokens} prompt tokens, "
        f"{stats.hit_tokens} reused ({stats.hit_rate:.1%}); "
        f"{stats.evicted_tokens} tokens evicted; "
        f"{stats.components['full'].cached}/{stats.capacity} slots cached at the end"
    )
    return 0
