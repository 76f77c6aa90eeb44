"""Trace replay: JSONL files of timed requests.

Two line formats, told apart per line:

* **Mooncake** (``hash_ids``): ``timestamp`` (ms from the start), ``input_length``,
  ``output_length`` and ``hash_ids``, one id per ``block``-token block of the prompt (512 in
  the published traces; the last block may be partial). Each id expands to a fixed
  pseudo-random token block (:func:`~radixkv.sim.requests.block_tokens`), so equal ids give
  equal tokens. The trace says nothing about the answers' tokens: they are fresh random
  tokens and are not cached (``cache_output=False``), since whatever the next turn reuses of
  an answer already appears in that turn's ``hash_ids``.
* **Tokens** (``tokens``): a list of token ids; optional ``timestamp`` (ms),
  ``output_length`` (default 1) and ``namespace`` (a string). Answers are fresh tokens and
  are cached.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .requests import SimRequest, block_tokens, random_tokens


@dataclass(frozen=True)
class TraceConfig:
    """``limit``: read only the first N requests. ``time_scale``: multiply timestamps (0.5
    replays twice as fast). ``block``: tokens per hash id. ``seed``: answers' tokens."""

    limit: int | None = None
    time_scale: float = 1.0
    block: int = 512
    seed: int = 0


def load_trace(path: str | Path, config: TraceConfig | None = None) -> list[SimRequest]:
    """Read a trace file; raise ``ValueError`` naming the line of a malformed record."""
    config = config or TraceConfig()
    rng = np.random.default_rng(config.seed)
    requests: list[SimRequest] = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if config.limit is not None and len(requests) >= config.limit:
                break
            if not line.strip():
                continue
            try:
                requests.append(_parse(json.loads(line), len(requests), config, rng))
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{path}:{number}: bad trace record: {exc}") from None
    return requests


def _parse(record: dict[str, object], rid: int, config: TraceConfig,
           rng: np.random.Generator) -> SimRequest:
    arrival = float(record.get("timestamp", 0.0)) / 1000.0 * config.time_scale  # type: ignore[arg-type]
    if "hash_ids" in record:
        length = int(record["input_length"])  # type: ignore[call-overload]
        ids = np.asarray(record["hash_ids"], dtype=np.int64)
        if len(ids) * config.block < length:
            raise ValueError(f"{len(ids)} hash ids cannot cover {length} tokens")
        if ids.size and ids.min() < 0:
            raise ValueError("hash ids must be >= 0")
        output = max(1, int(record.get("output_length", 1)))  # type: ignore[call-overload]
        return SimRequest(rid, arrival, block_tokens(ids, config.block, length),
                          random_tokens(rng, output), cache_output=False)
    tokens = np.asarray(record["tokens"], dtype=np.int64)
    if tokens.ndim != 1 or tokens.size == 0 or tokens.min() < 0 or tokens.max() >= 1 << 32:
        raise ValueError("tokens must be a non-empty list of ints in [0, 2**32)")
    output = max(1, int(record.get("output_length", 1)))  # type: ignore[call-overload]
    namespace = record.get("namespace")
    return SimRequest(rid, arrival, tokens.astype(np.uint32), random_tokens(rng, output),
                      namespace=None if namespace is None else (str(namespace), None))
