"""The short-prompt workload of ``radixkv bench ops``: about 60-token chat turns.

Real chat traffic is many short turns: a short system prompt, one of a few a deployment uses,
followed by the user's question. On such prompts the fixed cost of each call (validation,
packing, result objects) matters more than the per-token work the reference workload
(:mod:`radixkv.bench.workload`) exercises. The definition, drawn from CPython's
``random.Random`` (MT19937) in exactly this order, so that every tree under test regenerates
the same prompts:

- ``rng = Random(16)``; ``S = 8`` system prompts, each ``rng.randint(24, 40)`` tokens, each
  token ``rng.randint(1, 32000)`` (all of one system prompt before the next);
- then for each of the ``P`` prompts (default 20,000): ``k = rng.randint(0, S - 1)``, a
  question of ``rng.randint(16, 40)`` tokens drawn the same way, and the prompt is
  ``systems[k] + question``. Prompts are 40 to 80 tokens, about 60 on average, and every
  prompt shares its whole system prompt with about one prompt in eight.

The match queries (``Random(17)``, one per prompt): with ``roll = rng.random()``, below 1/3
an **exact** hit (``prompts[rng.randint(0, H - 1)]``, one of the ``H = P // 2`` prompts the
cache holds), below 2/3 a **system** hit (``prompts[rng.randint(H, P - 1)]``: its system
prompt is cached, its question is not), otherwise a **miss** (``rng.randint(40, 80)`` tokens
of ``rng.randint(1, 32000)``). The KV pool has ``K = 655,360`` slots, more than the prompts'
distinct tokens, so inserts never evict: the insert operation times allocate + insert alone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

VOCAB = 32000


@dataclass(frozen=True)
class ShortConfig:
    """Sizes of the short-prompt workload (defaults documented in the module)."""

    prompts: int = 20_000
    systems: int = 8
    system_len: tuple[int, int] = (24, 40)
    question_len: tuple[int, int] = (16, 40)
    miss_len: tuple[int, int] = (40, 80)
    kv_size: int = 655_360
    seed: int = 16
    query_seed: int = 17


def _tokens(rng: random.Random, count: int) -> list[int]:
    return [rng.randint(1, VOCAB) for _ in range(count)]


def short_prompts(config: ShortConfig) -> list[list[int]]:
    """The ``config.prompts`` prompts: a system prompt from a small set + a unique question."""
    rng = random.Random(config.seed)
    systems = [_tokens(rng, rng.randint(*config.system_len)) for _ in range(config.systems)]
    prompts = []
    for _ in range(config.prompts):
        system = systems[rng.randint(0, config.systems - 1)]
        prompts.append(system + _tokens(rng, rng.randint(*config.question_len)))
    return prompts


def short_queries(prompts: list[list[int]], populated: int, config: ShortConfig
                  ) -> tuple[list[list[int]], dict[str, int]]:
    """One match query per prompt (exact / system / miss, see the module) and their counts;
    ``populated`` is how many prompts, from the first, the cache holds."""
    rng = random.Random(config.query_seed)
    out: list[list[int]] = []
    kinds = {"exact": 0, "system": 0, "miss": 0}
    last = len(prompts) - 1
    for _ in range(len(prompts)):
        roll = rng.random()
        if roll < 1 / 3:
            out.append(prompts[rng.randint(0, populated - 1)])
            kinds["exact"] += 1
        elif roll < 2 / 3 and populated <= last:
            out.append(prompts[rng.randint(populated, last)])
            kinds["system"] += 1
        else:
            out.append(_tokens(rng, rng.randint(*config.miss_len)))
            kinds["miss"] += 1
    return out, kinds
