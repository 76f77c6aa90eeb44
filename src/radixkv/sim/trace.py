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
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .requests import SimRequest, block_tokens, finite_non_negative, random_tokens


@dataclass(frozen=True)
class TraceConfig:
    """``limit``: read only the first N requests. ``time_scale``: multiply timestamps (0.5
    replays twice as fast). ``block``: tokens per hash id. ``seed``: answers' tokens."""

    limit: int | None = None
    time_scale: float = 1.0
    block: int = 512
    seed: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.time_scale) and self.time_scale > 0):
            raise ValueError(f"time_scale must be a finite number > 0, got {self.time_scale!r}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be >= 1, got {self.limit!r}")
        if self.block < 1:
            raise ValueError(f"block must be >= 1, got {self.block!r}")


def load_trace(path: str | Path, config: TraceConfig | None = None) -> list[SimRequest]:
    """Read a trace file; raise ``ValueError`` naming the line of a malformed record (and
    for a file with no request)."""
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
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
            try:
                requests.append(_parse(record, len(requests), config, rng))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{path}:{number}: bad trace record: {exc}") from None
    if not requests:
        raise ValueError(f"{path}: no requests in this trace")
    return requests


def _parse(record: object, rid: int, config: TraceConfig,
           rng: np.random.Generator) -> SimRequest:
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    arrival = _timestamp(record) / 1000.0 * config.time_scale
    output = max(1, _count(record, "output_length", 1))
    if "hash_ids" in record:
        length = _count(record, "input_length")
        ids = _ids(record["hash_ids"], "hash_ids")
        if len(ids) * config.block < length:
            raise ValueError(f"{len(ids)} hash ids cannot cover {length} tokens")
        return SimRequest(rid, arrival, block_tokens(ids, config.block, length),
                          random_tokens(rng, output), cache_output=False)
    if "tokens" not in record:
        raise ValueError("a record needs hash_ids (with input_length) or tokens")
    tokens = _ids(record["tokens"], "tokens")
    if tokens.size == 0 or tokens.max() >= 1 << 32:
        raise ValueError("tokens must be a non-empty list of ints in [0, 2**32)")
    namespace = record.get("namespace")
    return SimRequest(rid, arrival, tokens.astype(np.uint32), random_tokens(rng, output),
                      namespace=None if namespace is None else (str(namespace), None))


def _timestamp(record: dict[str, object]) -> float:
    """``timestamp`` (ms, default 0): a finite number >= 0."""
    value = record.get("timestamp", 0)
    if not finite_non_negative(value):
        raise ValueError(f"timestamp must be a finite number of ms >= 0, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _count(record: dict[str, object], name: str, default: int | None = None) -> int:
    """Field ``name``: an int >= 0 (``default`` where absent; required without one)."""
    value = record.get(name, default)
    if value is None:
        raise ValueError(f"missing field {name!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return value


def _ids(value: object, name: str) -> np.ndarray:
    """A JSON list of ints >= 0 as an ``int64`` array (no float, bool or string slips in)."""
    if not isinstance(value, list):
        raise ValueError(f"{name} must be a list of ints, got {type(value).__name__}")
    if not value:
        return np.empty(0, dtype=np.int64)
    try:
        ids = np.asarray(value)
    except ValueError:  # ragged: lists inside the list
        raise ValueError(f"{name} must be a flat list of ints") from None
    # JSON ints come as int64; floats, bools, strings and ints past int64 do not
    if ids.ndim != 1 or ids.dtype != np.int64:
        raise ValueError(f"{name} must be a list of ints below 2**63")
    if ids.min() < 0:
        raise ValueError(f"{name} must be >= 0")
    return ids
