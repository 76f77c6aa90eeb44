"""Deterministic float64 primitives of the reference model.

Why a cached run and an uncached run give the same bits
--------------------------------------------------------
The model computes **one token at a time**: token ``p`` reads the KV of positions ``0..p``
(or of its window) and the recurrent state after ``p`` tokens, and produces its own KV, its
new state and its logits. How a prompt is split into chunks, which requests ran before it,
and which slots hold its KV never change *what* is computed for a token, only *where* the
inputs are read from. For the results to be equal bit for bit, each primitive below must
also be a function of its input values and shapes alone, never of memory addresses,
alignment, threads or batch sizes. They are built only from:

- gathers and scatters (``pool[slots]``): copies, exact;
- IEEE-754 basic operations applied elementwise (``+ - * /``, ``sqrt``, ``abs``,
  ``maximum``): correctly rounded, so every SIMD lane, loop tail or scalar fallback yields
  the same bits. No transcendental functions (``exp``, ``tanh``...), whose vectorized and
  scalar code paths may differ in the last bit: the softmax uses :func:`exp_neg`, an
  exponential built from multiplications only;
- reductions by ``np.add.reduce`` along the last, contiguous axis of a C-contiguous array
  (numpy's pairwise summation, whose grouping is a fixed function of the length) or along
  the first axis (accumulated in an order fixed by the shape and strides), and ``max``
  (exact in any order). No BLAS (``@``, ``np.dot``, ``einsum``): its kernels and thread
  splits may depend on sizes and alignment, and it may use fused multiply-adds.

Since every token is computed alone, the arrays it reduces have the same shapes in every
run, hence the same summation order. By induction over positions, a token whose cached KV
and state came from a run with the same prefix gets exactly the same logits.
"""

from __future__ import annotations

import numpy as np

EXP_SQUARINGS = 8
""":func:`exp_neg` computes ``(1 + x / 2**8) ** (2**8)`` by 8 squarings."""

_EXP_SCALE = float(2**EXP_SQUARINGS)
_NORM_EPS = 1e-6


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` for a C-contiguous ``(out, in)`` matrix, summed per row in
    numpy's fixed pairwise order (no BLAS)."""
    products = matrix * vector
    result: np.ndarray = np.add.reduce(products, axis=-1)
    return result


def rms_norm(vector: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """``vector / rms(vector) * gain``."""
    mean_square = np.add.reduce(vector * vector) / float(vector.shape[-1])
    scale = 1.0 / np.sqrt(mean_square + _NORM_EPS)
    result: np.ndarray = vector * scale * gain
    return result


def exp_neg(values: np.ndarray) -> np.ndarray:
    """An exponential for ``values <= 0`` made of multiplications only:
    ``max(0, 1 + x / 256) ** 256``; its relative error is about ``x**2 / 512`` for
    moderate ``x`` and it is exactly 0 below ``-256``. Monotone, exactly 1 at 0."""
    base = np.maximum(1.0 + values / _EXP_SCALE, 0.0)
    for _ in range(EXP_SQUARINGS):
        base = base * base
    return base


def attend(queries: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Multi-head attention of one token.

    ``queries``: ``(heads, dim)``; ``keys``, ``values``: ``(positions, heads, dim)``,
    C-contiguous. Returns ``(heads, dim)``: per head, the softmax-weighted (with
    :func:`exp_neg`) average of the values, scores scaled by ``1/sqrt(dim)``.
    """
    scale = 1.0 / np.sqrt(float(queries.shape[-1]))
    scores = np.add.reduce(keys * queries, axis=-1) * scale  # (positions, heads)
    weights = exp_neg(scores - np.max(scores, axis=0))
    total = np.add.reduce(weights, axis=0)  # (heads,)
    mixed = np.add.reduce(weights[:, :, None] * values, axis=0)  # (heads, dim)
    result: np.ndarray = mixed / total[:, None]
    return result


def soft_gate(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """A smooth squashing into ``(low, high)`` without transcendental functions:
    ``low + (high - low) * (1 + x / (1 + |x|)) / 2``."""
    unit = 0.5 * (1.0 + values / (1.0 + np.abs(values)))
    result: np.ndarray = low + (high - low) * unit
    return result
