"""``stats().held_by_requests`` (and ``Lease.num_own``) count exactly the primary slots of
the active leases' ``own_slots``, whatever state each lease is in: admitted, extended,
committed, checkpointed, window slid, waiting for a load-back, finished, aborted, failed."""

from __future__ import annotations

import random

import pytest

from radixkv import CacheConfig, HostTier, Lease, NumpyCopyConfig, NumpyCopyEngine, PrefixCache
from radixkv.errors import LeaseError, OutOfSlotsError

PAGE = 4

SHAPES = {
    "full": {},
    "full+swa": {"components": ("full", "swa"), "sliding_window": 8},
    "full+mamba": {"components": ("full", "mamba"), "mamba_track_interval": 8,
                   "mamba_states": 64},
}


def _views(cache: PrefixCache) -> int:
    """The definition: the length of every active lease's own-slots view."""
    return sum(len(lease.own_slots) for lease in cache.leases())


def _check(cache: PrefixCache) -> None:
    cache.check_invariants()
    assert all(lease.num_own == len(lease.own_slots) for lease in cache.leases())
    assert cache.stats().held_by_requests == _views(cache)


def _cache(shape: str, host: bool, seed: int) -> PrefixCache:
    extra = SHAPES[shape]
    tier = None
    if host:
        states = 64 if shape == "full+mamba" else 0
        tier = HostTier(capacity=256, states=states)
    engine = NumpyCopyEngine(NumpyCopyConfig(delay_polls=2, seed=seed, failure_rate=0.2)) \
        if host else None
    config = CacheConfig(capacity=160, page_size=PAGE, host=tier, **extra)  # type: ignore[arg-type]
    return PrefixCache(config, engine)


def test_a_scenario_counts_own_slots_step_by_step() -> None:
    cache = PrefixCache(CacheConfig(capacity=64, page_size=PAGE))
    first = cache.admit(list(range(1, 11)))  # 10 tokens: 3 pages, nothing cached
    assert (first.num_own, cache.stats().held_by_requests) == (12, 12)
    assert cache.commit(first, 8) == 8  # two pages now the tree's
    assert (first.num_own, cache.stats().held_by_requests) == (4, 4)
    cache.extend(first, [11, 12, 13])  # 13 tokens: a fourth page
    assert (first.num_own, cache.stats().held_by_requests) == (8, 8)
    second = cache.admit(list(range(1, 10)))  # 8 cached, 1 fresh token: one page
    assert (second.num_own, cache.stats().held_by_requests) == (4, 12)
    cache.abort(first)
    assert cache.stats().held_by_requests == 4
    cache.finish(second)
    assert cache.stats().held_by_requests == 0
    _check(cache)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("host", [False, True], ids=["device", "host"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_lease_life_cycles_keep_the_count_equal_to_the_views(
        shape: str, host: bool, seed: int) -> None:
    rng = random.Random(seed)
    cache = _cache(shape, host, seed)
    prefixes = [[rng.randrange(1, 50) for _ in range(rng.randrange(4, 24))] for _ in range(4)]
    leases: list[Lease] = []
    seen_states = set()
    for _ in range(300):
        _step(cache, rng, prefixes, leases, shape)
        leases[:] = [lease for lease in leases if lease in cache.leases()]
        seen_states.update(_state(lease) for lease in leases)
        _check(cache)
    for lease in list(cache.leases()):
        cache.abort(lease)
    _check(cache)
    assert cache.stats().held_by_requests == 0
    assert {"extended", "committed"} <= seen_states
    if host:
        assert "waiting" in seen_states


def _state(lease: Lease) -> str:
    if lease.waiting:
        return "waiting"
    if lease.tree_owned > lease.cached_length:
        return "committed"
    return "extended" if lease.num_tokens > lease.cached_length else "admitted"


def _step(cache: PrefixCache, rng: random.Random, prefixes: list[list[int]],
          leases: list[Lease], shape: str) -> None:
    action = rng.random()
    try:
        if action < 0.3 or not leases:
            prompt = rng.choice(prefixes) + [rng.randrange(1, 50)
                                             for _ in range(rng.randrange(0, 12))]
            leases.append(cache.admit(prompt, load_back=cache.host is not None))
            return
        lease = rng.choice(leases)
        if action < 0.38:
            cache.evict(rng.randrange(0, 32))  # with a host tier: demotes backed-up nodes
        elif action < 0.45:
            if cache.host is not None:
                cache.poll()
        elif action < 0.6:
            cache.extend(lease, [rng.randrange(1, 50) for _ in range(rng.randrange(1, 7))])
        elif action < 0.7:
            if shape == "full+mamba":  # a commit ends at a checkpoint
                _lighter_component(cache, rng, lease, shape)
            cache.commit(lease, rng.randrange(0, lease.num_tokens + 1))
        elif action < 0.78:
            _lighter_component(cache, rng, lease, shape)
        elif action < 0.9:
            cache.finish(lease)
        else:
            cache.abort(lease)
    except (OutOfSlotsError, LeaseError):  # full, or not ready yet: nothing changed
        pass


def _lighter_component(cache: PrefixCache, rng: random.Random, lease: Lease,
                       shape: str) -> None:
    """Slide the window, or save a checkpoint, where the cache has such a component."""
    if shape == "full+swa":
        cache.slide_window(lease)
    elif shape == "full+mamba":
        positions = [p for p in range(lease.tree_owned + 1, lease.num_tokens + 1)
                     if p % PAGE == 0 and p not in lease.checkpoints]
        if positions:
            cache.checkpoint(lease, rng.choice(positions))
