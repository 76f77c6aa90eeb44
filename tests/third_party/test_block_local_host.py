"""The third-party block-local component (see :mod:`.block_local`) through the host tier:
backed up, demoted, and loaded back with real bytes, without radixkv knowing it. Public
names only; pools hand out slots 0, 1, 2... so every slot below follows from the steps."""

from __future__ import annotations

import numpy as np

from radixkv import CacheConfig, FullAttention, HostTier, NumpyCopyEngine, PrefixCache

from .block_local import BlockLocal

NAMES = ("full", "block_local")


def _cache() -> tuple[PrefixCache, dict[tuple[str, str], np.ndarray]]:
    engine = NumpyCopyEngine()
    buffers = {(name, tier): np.full(size, -1, dtype=np.int64)
               for name in NAMES for tier, size in (("device", 16), ("host", 64))}
    for (name, tier), array in buffers.items():
        engine.register(name, tier, array)
    config = CacheConfig(capacity=16, components=(FullAttention(), BlockLocal(block=4)),
                         host=HostTier(capacity=64, write_policy="write_through"))
    return PrefixCache(config, engine), buffers


def _kv(name: str, positions: range) -> list[int]:
    """What an engine would compute for the prompt's tokens at ``positions``."""
    base = 1000 if name == "full" else 2000
    return [base + p for p in positions]


def test_a_third_party_component_is_backed_up_demoted_and_loaded_back() -> None:
    cache, buffers = _cache()
    prompt = list(range(100, 112))
    first = cache.admit(prompt)
    for name in NAMES:  # the engine computes the prompt into the lease's slots
        buffers[(name, "device")][first.slots_of(name)] = _kv(name, range(12))
    assert cache.finish(first) == 12
    cache.check_invariants()
    host = cache.stats().host
    assert host is not None and host.copies_in_flight == 1  # write-through: backed up now
    assert cache.poll() == []
    cache.check_invariants()
    assert buffers[("full", "host")][:12].tolist() == _kv("full", range(12))
    assert buffers[("block_local", "host")][:12].tolist() == _kv("block_local", range(12))

    assert cache.evict(full=12) == {"full": 12, "block_local": 12}  # demoted, not dropped
    cache.check_invariants()
    for name in NAMES:
        buffers[(name, "device")][:] = -1  # the device rows are reused by someone else
    found = cache.match(prompt)
    assert (found.length, found.host_length, cache.stats().nodes) == (0, 12, 1)

    second = cache.admit([*prompt, 7], load_back=True)
    cache.check_invariants()
    assert (second.cached_length, second.ready) == (12, False)
    assert buffers[("full", "device")][second.slots[:12]].tolist() == [-1] * 12  # not yet
    assert cache.poll() == [second] and second.ready
    cache.check_invariants()
    assert buffers[("full", "device")][second.slots[:12]].tolist() == _kv("full", range(12))
    # the next token (position 12, block 3) needs block 2's KV, positions [8, 12)
    window = second.slots_of("block_local")[8 - second.start_of("block_local") : 12 -
                                           second.start_of("block_local")]
    assert buffers[("block_local", "device")][window].tolist() == \
        _kv("block_local", range(8, 12))
    stats = cache.stats().host
    assert stats is not None and stats.host_hit_tokens == 12 and stats.load_requests == 1
    cache.finish(second)
    cache.check_invariants()
