"""``radixkv bench tiers``: what the host tier costs the cache's own bookkeeping.

Each operation runs on a cache with a host tier and, in the same round, on the same cache
without one (``host=None``), over the same inputs; the ratio is tier-on ops/s over tier-off.
The copy engine is a :class:`~radixkv.host.NumpyCopyEngine` with no registered buffers:
copies complete at the next poll without moving bytes, so the numbers are the cache's work
(planning, placing values, locks, tickets, acknowledgements), never a memcpy.

Operations (``TIER_OPS``):

* ``match_idle``: matches (the reference queries: exact, extended, misses) on a cache whose
  host tier is configured but never used (``write_back``, no eviction) against tier off:
  what merely having the tier costs a match.
* ``match_host``: matches of prefixes that are partly host-only (demoted); tier on reports
  ``host_length``, tier off (same device contents) only its device hit.
* ``admit_load_back``: ``admit(load_back=True)``, ``poll()`` until the lease is ready, then
  ``finish``, for such prefixes; tier off admits the same prompt (recomputing what was
  evicted) and finishes it.
* ``evict_demote``: ``evict(full=batch)`` on a full device whose nodes are all backed up
  (``write_through``): every eviction demotes; tier off drops the same nodes.
* ``evict_write_back``: the same under ``write_back``, where nothing is backed up yet: each
  eviction pauses on a node, backs it up, waits for the acknowledgement and demotes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..cache import CacheConfig, PrefixCache
from ..host import HostTier, NumpyCopyEngine
from .timing import Timing, time_items
from .workload import WorkloadConfig, queries, sequences

TIER_OPS = ("match_idle", "match_host", "admit_load_back", "evict_demote", "evict_write_back")


@dataclass(frozen=True)
class TierBenchConfig:
    """``device_share``: device FULL slots as a share of the tokens the workload's tree
    holds (the rest of what is reused must come from the host); the host holds all of it.
    ``evict_batch``: tokens per timed eviction."""

    num_seqs: int = 2000
    page_size: int = 16
    device_share: float = 0.25
    evict_batch: int = 512
    verify: bool = False


@dataclass(frozen=True)
class Sizes:
    """The inputs of one page size: sequences, queries, and the two capacities."""

    seqs: list[list[int]]
    queries: list[list[int]]
    tree_tokens: int
    device: int
    host: int


def sizes(config: TierBenchConfig) -> Sizes:
    """The reference workload's sequences and queries, and capacities from the tokens a
    tree of all sequences holds (measured on a throw-away unbounded cache)."""
    seqs = sequences(WorkloadConfig(num_seqs=config.num_seqs))
    items, _ = queries(seqs, len(seqs) // 2)
    page = config.page_size
    total = -(-sum(map(len, seqs)) // page) * page
    probe = PrefixCache(CacheConfig(capacity=total, page_size=page, lost_hits=False))
    for seq in seqs:
        probe.finish(probe.admit(seq))
    held = probe.stats().components["full"].cached
    device = max(page, int(held * config.device_share) // page * page)
    return Sizes(seqs, items, held, device, total)


def make_cache(config: TierBenchConfig, capacity: int, host: int | None,
               policy: str = "write_through") -> PrefixCache:
    """A FULL cache of ``capacity`` device slots; with ``host``, a host tier of that many
    slots under ``policy`` and a bookkeeping-only copy engine."""
    tier = None if host is None else HostTier(capacity=host, write_policy=policy)
    return PrefixCache(CacheConfig(capacity=capacity, page_size=config.page_size,
                                   lost_hits=False, host=tier), NumpyCopyEngine())


def populate(cache: PrefixCache, seqs: Sequence[list[int]]) -> None:
    """Admit and finish every sequence, letting each backup land before the next."""
    for seq in seqs:
        cache.finish(cache.admit(seq))
        cache.wait()


@dataclass
class TierResult:
    """One operation on one cache: its timing and what its inputs found."""

    op: str
    tier: str
    timing: Timing
    counts: dict[str, Any]


def _check(cache: PrefixCache, verify: bool) -> Callable[[Any], None] | None:
    return (lambda _item: cache.check_invariants()) if verify else None


def _timed(cache: PrefixCache, items: Sequence[Any], op: Callable[[Any], object],
           tokens: int, verify: bool) -> Timing:
    warmup = min(20, len(items) // 10)
    return time_items(items, op, warmup, len(items) - warmup, tokens, _check(cache, verify))


def _tier(on: bool) -> str:
    return "host" if on else "off"


def run_match_idle(config: TierBenchConfig, size: Sizes, on: bool) -> TierResult:
    capacity = size.host  # room for everything: nothing is ever evicted
    cache = make_cache(config, capacity, size.host if on else None, policy="write_back")
    populate(cache, size.seqs)
    timing = _timed(cache, size.queries, cache.match, 0, config.verify)
    host = cache.stats().host
    used = 0 if host is None else host.backup_batches + host.load_batches
    return TierResult("match_idle", _tier(on), timing, {"copies": used})


def host_hits(config: TierBenchConfig, size: Sizes) -> list[list[int]]:
    """The sequences a populated tier-on cache serves partly from the host (pure)."""
    cache = make_cache(config, size.device, size.host)
    populate(cache, size.seqs)
    return [seq for seq in size.seqs if cache.match(seq).host_length]


def _populated(config: TierBenchConfig, size: Sizes, on: bool,
               policy: str = "write_through") -> PrefixCache:
    cache = make_cache(config, size.device, size.host if on else None, policy)
    populate(cache, size.seqs)
    return cache


def run_match_host(config: TierBenchConfig, size: Sizes, on: bool,
                   items: list[list[int]]) -> TierResult:
    cache = _populated(config, size, on)
    found = [cache.match(seq) for seq in items]  # untimed: what the inputs find
    counts = {"queries": len(items), "device_tokens": sum(m.length for m in found),
              "host_tokens": sum(m.host_length for m in found)}
    timing = _timed(cache, items, cache.match, 0, config.verify)
    return TierResult("match_host", _tier(on), timing, counts)


def run_admit(config: TierBenchConfig, size: Sizes, on: bool,
              items: list[list[int]]) -> TierResult:
    cache = _populated(config, size, on)

    def admit(seq: list[int]) -> None:
        lease = cache.admit(seq, load_back=on)
        while not lease.ready:
            cache.poll()
        cache.finish(lease)

    timing = _timed(cache, items, admit, 0, config.verify)
    stats = cache.stats()
    counts = {"hit_tokens": stats.hit_tokens,
              "host_hit_tokens": 0 if stats.host is None else stats.host.host_hit_tokens,
              "load_requests": 0 if stats.host is None else stats.host.load_requests}
    return TierResult("admit_load_back", _tier(on), timing, counts)


def run_evict(config: TierBenchConfig, size: Sizes, on: bool, policy: str) -> TierResult:
    cache = _populated(config, size, on, policy)
    batch = config.evict_batch
    calls = max(10, size.device * 3 // 4 // batch)  # within what a full device holds
    before = cache.stats().evicted_tokens
    timing = _timed(cache, [batch] * calls, cache.evict, batch, config.verify)
    stats = cache.stats()
    counts = {"calls": calls, "evicted_tokens": stats.evicted_tokens - before,
              "nodes": stats.nodes,
              "host_cached": 0 if stats.host is None else
              stats.host.components["full"].cached}
    name = "evict_demote" if policy == "write_through" else "evict_write_back"
    return TierResult(name, _tier(on), timing, counts)


def run_op(name: str, config: TierBenchConfig, size: Sizes, on: bool,
           items: list[list[int]]) -> TierResult:
    """Operation ``name`` on a fresh cache with (``on``) or without the host tier."""
    if name == "match_idle":
        return run_match_idle(config, size, on)
    if name == "match_host":
        return run_match_host(config, size, on, items)
    if name == "admit_load_back":
        return run_admit(config, size, on, items)
    return run_evict(config, size, on,
                     "write_through" if name == "evict_demote" else "write_back")
