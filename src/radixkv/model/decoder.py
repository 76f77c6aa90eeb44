"""The tiny reference decoder: seeded random weights, one token at a time.

``x = embed[token] + position[p]``; each layer adds ``layer(rms_norm(x))`` to ``x``;
``logits = head @ rms_norm(x)``. Layers:

- ``"full"``: multi-head causal attention over positions ``0..p`` (KV in FULL slots);
- ``"swa"``: the same over ``[max(0, p - W), p]`` (KV in SWA slots);
- ``"chunked"``: the same over ``[p - p % C, p]``, the token's own chunk so far (KV in the
  chunked component's slots);
- ``"ssm"``: a diagonal, input-gated linear recurrence (no convolution):
  ``s = a * s + (1 - a) * (B h)``, ``a = gate(A h)`` in ``(0.05, 0.95)``, output ``C s``.

Every operation comes from :mod:`radixkv.model.numerics` (see there why the results are a
function of the token, its position and the KV/state it reads, bit for bit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .memory import Memory
from .model_config import ModelConfig
from .numerics import attend, matvec, rms_norm, soft_gate


@dataclass(frozen=True)
class TokenSlots:
    """Where one token at position ``p`` reads and writes.

    ``kv[kind]``: for each attention layer kind of the model, the slots of positions
    ``span_start(kind, p) .. p`` in that kind's KV pools (the last is the token's own; see
    :meth:`ModelConfig.span_start`). ``state``: the request's working state slot (``None``
    for a model without SSM layers).
    """

    kv: Mapping[str, np.ndarray]
    state: int | None


def _init(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """A C-contiguous ``(rows, cols)`` matrix scaled by ``1/sqrt(cols)``."""
    matrix = rng.standard_normal((rows, cols)) / np.sqrt(float(cols))
    return np.ascontiguousarray(matrix)


class Decoder:
    """Weights of the decoder and its per-token forward step."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        rng = np.random.default_rng(config.seed)
        dim = config.d_model
        self.embed = rng.standard_normal((config.vocab_size, dim))
        self.position = 0.5 * rng.standard_normal((config.max_positions, dim))
        self.gains = [1.0 + 0.1 * rng.standard_normal(dim) for _ in config.layers]
        self.weights: list[dict[str, np.ndarray]] = [
            self._layer_weights(rng, kind) for kind in config.layers
        ]
        self.final_gain = 1.0 + 0.1 * rng.standard_normal(dim)
        self.head = _init(rng, config.vocab_size, dim)

    def _layer_weights(self, rng: np.random.Generator, kind: str) -> dict[str, np.ndarray]:
        dim, state = self.config.d_model, self.config.state_size
        if kind == "ssm":
            return {"gate": _init(rng, state, dim), "input": _init(rng, state, dim),
                    "output": _init(rng, dim, state)}
        return {name: _init(rng, dim, dim) for name in ("query", "key", "value", "output")}

    def step(self, memory: Memory, token: int, position: int, slots: TokenSlots) -> np.ndarray:
        """Run token ``token`` at ``position``: write its KV (and update the state in
        place), return its logits ``(vocab_size,)``. Raises ``ValueError`` for a position
        outside the position table or a missing state slot."""
        if not 0 <= position < self.config.max_positions:
            raise ValueError(f"position {position} outside [0, {self.config.max_positions})")
        hidden = self.embed[token] + self.position[position]
        for index, kind in enumerate(self.config.layers):
            normed = rms_norm(hidden, self.gains[index])
            if kind == "ssm":
                if slots.state is None:
                    raise ValueError("a model with SSM layers needs a state slot")
                update = self._ssm(memory.states[index], index, normed, slots.state)
            else:
                update = self._attention(memory, index, normed, slots.kv[kind])
            hidden = hidden + update
        return matvec(self.head, rms_norm(hidden, self.final_gain))

    def _attention(
        self, memory: Memory, index: int, normed: np.ndarray, slots: np.ndarray
    ) -> np.ndarray:
        weights, config = self.weights[index], self.config
        shape = (config.heads, config.head_dim)
        pool = memory.kv[index]
        pool.write(int(slots[-1]), matvec(weights["key"], normed).reshape(shape),
                   matvec(weights["value"], normed).reshape(shape))
        keys, values = pool.gather(slots)
        query = matvec(weights["query"], normed).reshape(shape)
        mixed = attend(query, keys, values)
        return matvec(weights["output"], mixed.reshape(-1))

    def _ssm(self, pool: np.ndarray, index: int, normed: np.ndarray, slot: int) -> np.ndarray:
        weights = self.weights[index]
        decay = soft_gate(matvec(weights["gate"], normed), 0.05, 0.95)
        state = decay * pool[slot] + (1.0 - decay) * matvec(weights["input"], normed)
        pool[slot] = state
        return matvec(weights["output"], state)
