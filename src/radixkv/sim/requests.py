"""What a simulated workload is made of: timed requests with token ids and outputs."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from .keys import mix64

VOCAB = 1 << 30
"""Token ids are drawn below this: large, so unrelated random blocks never share a token by
chance and the only reuse is the reuse a workload builds in."""


@dataclass(frozen=True, eq=False)
class SimRequest:
    """One request. ``arrival``: seconds from the start (a request with a ``parent`` arrives
    ``delay`` seconds after its parent finished instead: the next turn of a chat waits for the
    answer). ``prompt`` and ``output``: uint32 token ids (``output`` at least one token: the
    first comes out of the prefill). ``namespace``: the cache namespace (``None``: default).
    ``cache_output``: whether the answer is cached at finish (trace replays say no: the
    trace gives only prompt blocks, see :mod:`radixkv.sim.trace`)."""

    rid: int
    arrival: float
    prompt: np.ndarray
    output: np.ndarray
    namespace: object = None
    parent: int | None = None
    delay: float = 0.0
    cache_output: bool = True
    tags: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Converts ``prompt`` and ``output`` to uint32 arrays and the times to floats, once
        (a list or another int dtype is taken if its ids fit); raises ``ValueError`` for
        empty or bad ids, and for times that are not finite and >= 0."""
        for name in ("prompt", "output"):
            ids = getattr(self, name)
            if not (type(ids) is np.ndarray and ids.dtype == np.uint32 and ids.ndim == 1):
                object.__setattr__(self, name, _token_ids(ids, self.rid, name))
        if len(self.prompt) < 1 or len(self.output) < 1:
            raise ValueError(f"request {self.rid}: prompt and output need at least one token")
        for name in ("arrival", "delay"):
            value = getattr(self, name)
            if not finite_non_negative(value):
                raise ValueError(f"request {self.rid}: {name} must be a finite number of "
                                 f"seconds >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))


def finite_non_negative(value: object) -> bool:
    """Whether ``value`` is a real number (not a bool), finite and >= 0: what every time,
    rate and count of the simulator's inputs must be."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    number = float(value)
    return math.isfinite(number) and number >= 0


def _token_ids(ids: object, rid: int, name: str) -> np.ndarray:
    """``ids`` as a fresh 1-D uint32 array; raises ``ValueError`` unless they are ints in
    ``[0, 2**32)``."""
    array = np.asarray(ids)
    if array.size == 0:
        return np.zeros(0, dtype=np.uint32)
    if array.ndim != 1 or array.dtype.kind not in "iu" or array.min() < 0 \
            or array.max() >= 1 << 32:
        raise ValueError(f"request {rid}: {name} must be token ids, ints in [0, 2**32)")
    return array.astype(np.uint32)


def random_tokens(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` fresh token ids (uint32)."""
    return rng.integers(0, VOCAB, n, dtype=np.uint32)


def block_tokens(block_ids: np.ndarray, block: int, length: int, salt: int = 0) -> np.ndarray:
    """Tokens of a prompt given as block ids: block id ``h`` always expands to the same
    ``block`` pseudo-random tokens, so equal ids give equal tokens; the prompt is cut to
    ``length`` tokens (the last block may be partial). Vectorized."""
    ids = np.repeat(np.asarray(block_ids, dtype=np.uint64), block)
    offsets = np.tile(np.arange(block, dtype=np.uint64), len(block_ids))
    mixed = mix64((ids * np.uint64(block) + offsets) ^ np.uint64(salt))
    tokens: np.ndarray = (mixed[:length] % np.uint64(VOCAB)).astype(np.uint32)
    return tokens


def cached_parts(request: SimRequest) -> tuple[np.ndarray, ...]:
    """What the request may cache: its prompt and, when its answer is cached, the fed part
    of the answer (all but the last token)."""
    if request.cache_output and len(request.output) > 1:
        return request.prompt, request.output[:-1]
    return (request.prompt,)
