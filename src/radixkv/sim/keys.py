"""Prefix keys: one 64-bit key per page boundary of a token sequence, and a set of them.

The simulator needs to know, for a prompt, how long a prefix some earlier request shared
(the ideal an unbounded cache could reuse) and how much a router believes an engine holds.
It never asks the cache for that: it keeps its own index of *prefix keys*. The key of the
prefix of length ``i * page`` is a position-weighted sum of mixed token values, so the keys
of every page boundary of a sequence come out of one vectorized ``cumsum`` (no per-token
Python), and a prefix's key never depends on what follows it. Two different prefixes share a
key with probability about 2**-64.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer applied elementwise (uint64 in, uint64 out, wrapping)."""
    z = values.astype(np.uint64) + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    mixed: np.ndarray = z ^ (z >> _S31)
    return mixed


class _Weights:
    """Per-position weights ``mix64(position)``, grown on demand (deterministic)."""

    def __init__(self) -> None:
        self.values = mix64(np.arange(1 << 16, dtype=np.uint64) ^ np.uint64(0x5EED))

    def first(self, n: int) -> np.ndarray:
        if n > len(self.values):
            size = max(n, 2 * len(self.values))
            self.values = mix64(np.arange(size, dtype=np.uint64) ^ np.uint64(0x5EED))
        return self.values[:n]


_WEIGHTS = _Weights()


def namespace_salt(namespace: object) -> int:
    """A 64-bit salt per namespace (the default one, ``None`` or ``(None, None)``: 0),
    stable across runs; give it the cache's normalized namespace."""
    if namespace is None or namespace == (None, None):
        return 0
    return int.from_bytes(hashlib.blake2b(repr(namespace).encode(), digest_size=8).digest(),
                          "little")


def prefix_sums(tokens: np.ndarray, start: int = 0) -> np.ndarray:
    """Running sums (uint64) after each token of ``tokens`` placed at ``start ..``.

    A token enters as an invertible scramble of its value (offset, odd multiply, xor-shift;
    never 0, so every token moves the sum) times its position's random weight: different
    prefixes of equal length differ in some term, and a random weight makes their sums
    collide with probability about 2**-64."""
    weights = _WEIGHTS.first(start + len(tokens))[start:]
    scrambled = (tokens.astype(np.uint64) + _GOLDEN) * _M1  # never 0, for any token
    scrambled ^= scrambled >> _S31
    scrambled *= weights
    return np.cumsum(scrambled, dtype=np.uint64)


def page_keys(tokens: np.ndarray, page: int, salt: int = 0) -> np.ndarray:
    """Key of each whole-page prefix of ``tokens``: element ``i`` is the prefix of
    ``(i + 1) * page`` tokens. Pure; O(len(tokens)) in numpy."""
    whole = len(tokens) - len(tokens) % page
    if whole == 0:
        return np.zeros(0, dtype=np.uint64)
    sums = prefix_sums(tokens[:whole])[page - 1 :: page]
    keys: np.ndarray = sums ^ np.uint64(salt)
    return keys


class PrefixIndex:
    """A set of prefix keys (all of one page size) that is closed under prefixes as long as
    whole sequences' keys are added: then the pages of a prompt that are present form a
    prefix of it, and :meth:`longest` finds its end by halving."""

    def __init__(self, page: int) -> None:
        self.page = page
        self.keys: set[int] = set()

    def add(self, keys: Iterable[int]) -> None:
        self.keys.update(keys)

    def discard(self, keys: Iterable[int]) -> None:
        self.keys.difference_update(keys)

    def longest(self, keys: list[int], limit: int | None = None) -> int:
        """Tokens of the longest prefix whose page keys are present (at most ``limit``
        pages); O(log pages) set lookups."""
        low, high = 0, len(keys) if limit is None else min(limit, len(keys))
        present = self.keys
        while low < high:
            middle = (low + high + 1) // 2
            if keys[middle - 1] in present:
                low = middle
            else:
                high = middle - 1
        return low * self.page

    def __len__(self) -> int:
        return len(self.keys)
