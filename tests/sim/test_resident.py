"""ResidentIndex rebuilt from a real cache's KV events agrees with the cache's own match."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import OutOfSlotsError
from radixkv.sim.keys import namespace_salt, page_keys
from radixkv.sim.resident import ResidentIndex

PAGE = 4


def prompt(rng: np.random.Generator) -> np.ndarray:
    """Prompts over a tiny alphabet in short runs, so they share prefixes and branch."""
    stem = [int(rng.integers(0, 3)) for _ in range(int(rng.integers(1, 5)))]
    return np.repeat(np.array(stem, dtype=np.uint32), PAGE * int(rng.integers(1, 3)))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), capacity=st.sampled_from([16, 48, 256]))
def test_the_event_index_matches_what_the_cache_holds(seed: int, capacity: int) -> None:
    rng = np.random.default_rng(seed)
    cache = PrefixCache(CacheConfig(capacity=capacity, page_size=PAGE, events=True))
    index = ResidentIndex(PAGE)
    namespaces = [None, ("tenant", None)]
    for _ in range(30):
        tokens, space = prompt(rng), namespaces[int(rng.integers(0, 2))]
        with contextlib.suppress(OutOfSlotsError):  # too long: nothing changed
            cache.finish(cache.admit(tokens, space))
        if rng.random() < 0.2:
            cache.evict(full=PAGE * int(rng.integers(1, 4)))
        cache.check_invariants()
        index.feed(cache.take_events())
        probe, probe_space = prompt(rng), namespaces[int(rng.integers(0, 2))]
        salt = namespace_salt(cache.namespace_of(probe_space))
        keys = page_keys(probe, PAGE, salt).tolist()
        assert index.longest(keys) == cache.match(probe, probe_space).length


def test_clearing_the_cache_clears_the_index() -> None:
    cache = PrefixCache(CacheConfig(capacity=64, page_size=PAGE, events=True))
    index = ResidentIndex(PAGE)
    tokens = np.arange(12, dtype=np.uint32)
    cache.finish(cache.admit(tokens))
    index.feed(cache.take_events())
    assert index.longest(page_keys(tokens, PAGE).tolist()) == 12
    cache.reset()
    index.feed(cache.take_events())
    assert index.longest(page_keys(tokens, PAGE).tolist()) == 0
    assert len(index.index) == 0
