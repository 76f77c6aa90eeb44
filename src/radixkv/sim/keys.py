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

import bisect
import hashlib
import itertools
import math
from collections.abc import Iterable, Sequence

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

CHUNK_TOKENS = 1 << 17
"""Tokens per vectorized pass of :class:`SequenceKeys`: its two buffers (8 bytes a token)
stay in the CPU caches and are reused (bench sim: fresh 16 MB arrays cost more in page
faults than the arithmetic)."""


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
    return np.cumsum(_terms(tokens, weights), dtype=np.uint64)


def _terms(tokens: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each token's term of the running sum: its scrambled value times its weight."""
    values = tokens.astype(np.uint64)
    _scramble(values)
    values *= weights
    return values


def _scramble(values: np.ndarray, spare: np.ndarray | None = None) -> None:
    """Scramble uint64 token values in place (never 0, for any token); ``spare``: a
    buffer of the same shape for the intermediate."""
    values += _GOLDEN
    values *= _M1
    values ^= np.right_shift(values, _S31, out=spare)


def page_keys(tokens: np.ndarray, page: int, salt: int = 0) -> np.ndarray:
    """Key of each whole-page prefix of ``tokens``: element ``i`` is the prefix of
    ``(i + 1) * page`` tokens. Pure; O(len(tokens)) in numpy."""
    whole = len(tokens) - len(tokens) % page
    if whole == 0:
        return np.zeros(0, dtype=np.uint64)
    sums = prefix_sums(tokens[:whole])[page - 1 :: page]
    keys: np.ndarray = sums ^ np.uint64(salt)
    return keys


class SequenceKeys:
    """The unsalted page keys of many token sequences, computed up front in vectorized
    passes over about :data:`CHUNK_TOKENS` tokens at a time in two reused buffers, rather
    than one short pass per sequence (bench sim: that was a tenth of the run). Sequence
    ``i`` is the concatenation of the arrays ``sequences[i]`` (say a prompt and an answer);
    :meth:`of` gives what :func:`page_keys` gives for it. Holds 8 bytes a page."""

    def __init__(self, sequences: Sequence[Sequence[np.ndarray]], page: int) -> None:
        self.page = page
        pages = [sum(map(len, parts)) // page for parts in sequences]
        offsets = self._offsets = [0, *itertools.accumulate(pages)]
        self._keys = np.empty(offsets[-1], dtype=np.uint64)
        groups = _groups(offsets, max(1, CHUNK_TOKENS // page))
        most = max((offsets[last] - offsets[first] for first, last in groups), default=0)
        buffers = np.empty(most * page, dtype=np.uint64), np.empty(most * page, dtype=np.uint64)
        for first, last in groups:
            self._fill(sequences[first:last], pages[first:last], offsets[first], *buffers)

    def of(self, index: int, salt: int = 0) -> list[int]:
        """Page keys of sequence ``index`` in the namespace of ``salt``."""
        keys = self._keys[self._offsets[index] : self._offsets[index + 1]]
        listed: list[int] = (keys ^ np.uint64(salt) if salt else keys).tolist()
        return listed

    def _fill(self, sequences: Sequence[Sequence[np.ndarray]], pages: list[int], offset: int,
              values: np.ndarray, spare: np.ndarray) -> None:
        """The keys of ``sequences`` (each cut to ``pages`` whole pages) from ``offset`` on:
        page sums over their concatenation, one running sum over those, less the sum before
        each sequence (wrapping uint64 arithmetic, so the difference is exact)."""
        page = self.page
        count = sum(pages)
        if not count:
            return
        values, spare = values[: count * page], spare[: count * page]
        np.concatenate(_cut(sequences, pages, page), out=values)
        _scramble(values, spare)
        table = _WEIGHTS.first(max(pages) * page)
        np.concatenate([table[: n * page] for n in pages], out=spare)
        values *= spare
        sums = np.cumsum(values.reshape(-1, page).sum(axis=1, dtype=np.uint64), dtype=np.uint64)
        starts = np.cumsum(pages) - pages
        before = np.where(starts > 0, sums[np.maximum(starts - 1, 0)], np.uint64(0))
        self._keys[offset : offset + count] = sums - np.repeat(before, pages)


def _groups(offsets: list[int], pages: int) -> list[tuple[int, int]]:
    """Consecutive index ranges of sequences of about ``pages`` pages in all (a longer
    sequence alone), given the running page counts ``offsets``."""
    groups, first = [], 0
    for index in range(1, len(offsets)):
        if offsets[index] - offsets[first] >= pages or index == len(offsets) - 1:
            groups.append((first, index))
            first = index
    return groups


def _cut(sequences: Sequence[Sequence[np.ndarray]], pages: list[int], page: int
         ) -> list[np.ndarray]:
    """The parts of each sequence up to its last whole page."""
    parts = []
    for sequence, count in zip(sequences, pages):
        room = count * page
        for part in sequence:
            if room <= 0:
                break
            parts.append(part if len(part) <= room else part[:room])
            room -= len(part)
    return parts


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
        high = len(keys) if limit is None else min(limit, len(keys))
        if high <= 0:
            return 0
        # bench sim: the halving in C (longest 157 -> 37 opcodes a call): over the keys
        # reversed, the first present one is where the absent tail ends; bisect_left probes
        # exactly the keys the loop ``low, high = 0, high; middle = (low + high + 1) // 2;
        # low = middle if keys[middle - 1] present else high = middle - 1`` probed
        found = bisect.bisect_left(keys[high - 1 :: -1], True, key=self.keys.__contains__)
        return (high - found) * self.page

    def __len__(self) -> int:
        return len(self.keys)


class TimedPrefixIndex:
    """Prefix keys with the earliest simulated time each was added: what a cluster's
    engines computed, and from when on. Engines add out of time order (each step is added
    at its end, and one engine may run ahead of another), so a key keeps the earliest time
    any engine gave it. An engine adds a stretch of a sequence only once it has computed
    (or cached) the pages before it, at no later time: so along a sequence the times do not
    decrease, and the pages present by a given time form a prefix of it."""

    def __init__(self, page: int) -> None:
        self.page = page
        self.times: dict[int, float] = {}

    def add(self, keys: Iterable[int], when: float) -> None:
        times = self.times
        for key in keys:
            if times.get(key, math.inf) > when:
                times[key] = when

    def longest(self, keys: list[int], now: float) -> int:
        """Tokens of the longest prefix whose page keys were added by ``now``; O(log pages)
        lookups."""
        times = self.times
        found = bisect.bisect_left(keys[::-1], True,
                                   key=lambda key: times.get(key, math.inf) <= now)
        return (len(keys) - found) * self.page

    def __len__(self) -> int:
        return len(self.times)
