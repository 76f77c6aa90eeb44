"""``radixkv bench storage``: what a second engine gains from a storage tier (L3) it shares.

Engine 1 serves a workload on a fresh cache with a host tier and L3, writing what it
computes; then engine 2, a fresh cache on the same store, serves the same requests (or the
rest of the workload, which shares prefixes with the first part), and so does a control
engine 2 without L3 (same device and host sizes). For engine 2 the report gives the prompt
tokens restored from L3 and the tokens computed, the hit rate with and without L3, and the
store's read and write seconds and bytes.

Each engine is one :class:`~radixkv.PrefixCache` with real device and host buffers (one
float32 row of ``row_floats`` per token; a :class:`~radixkv.host.NumpyCopyEngine` moves the
rows) and its own client of the store. Serving a request: ``admit(load_back=True)`` (which
prefetches from L3 under ``wait_policy``), wait for the load-back, write the KV rows of the
tokens not cached (a pure function of token and position, so engines computing the same
prompt write the same bytes), ``finish``, ``poll``. With ``verify`` each admitted prefix's
device rows are compared with those rows and the cache is audited after every request.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..cache import CacheConfig, LeaseState, PrefixCache
from ..errors import InvariantError
from ..host import HostTier, NumpyCopyEngine
from ..storage import StorageBackend, StorageLayout, StorageTier
from ..storage.tier_stats import StorageTierStats

MODEL = "radixkv-bench-storage"


@dataclass(frozen=True)
class StorageBenchConfig:
    """``device_share`` / ``host_share``: device and host FULL slots as a share of the
    tokens a tree of engine 2's prompts holds (rounded to pages, at least twice the
    longest prompt); ``row_floats``: float32 values per token row (the KV bytes a page
    carries: ``page_size * row_floats * 4``)."""

    page_size: int = 16
    row_floats: int = 256
    device_share: float = 0.25
    host_share: float = 0.5
    prefetch_threshold: int = 64
    wait_policy: str = "wait_complete"
    write_policy: str = "write_through"
    verify: bool = False
    progress_every: int = 0
    """Print a progress line every this many requests (0: never)."""
    model: str = MODEL
    """The model id in the storage keys (a fresh one per run keeps runs apart on a store
    that outlives them)."""


@dataclass
class EngineRun:
    """What one engine did: requests, prompt tokens, hits, L3's part, wall seconds."""

    name: str
    requests: int = 0
    prompt_tokens: int = 0
    hit_tokens: int = 0
    failed_loads: int = 0
    wall_s: float = 0.0
    storage: dict[str, Any] = field(default_factory=dict)

    @property
    def computed_tokens(self) -> int:
        return self.prompt_tokens - self.hit_tokens

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def kv_rows(tokens: np.ndarray, width: int) -> np.ndarray:
    """The KV rows an engine computes for ``tokens``: a pure function of each token and its
    position (so what L3 returns can be checked)."""
    positions = np.arange(len(tokens), dtype=np.int64)
    values = ((tokens.astype(np.int64) * 31 + positions) % 65521).astype(np.float32)
    return np.repeat(values[:, None], width, axis=1)


@dataclass
class Engine:
    """A cache over real buffers, and the buffer its computed rows go to."""

    cache: PrefixCache
    device: np.ndarray


def make_engine(config: StorageBenchConfig, device: int, host: int,
                backend: StorageBackend | None) -> Engine:
    """A FULL cache of ``device`` slots with a host tier of ``host`` slots, and an L3 tier
    over ``backend`` when one is given."""
    copies = NumpyCopyEngine()
    rows = np.zeros((device, config.row_floats), np.float32)
    copies.register("full", "device", rows)
    copies.register("full", "host", np.zeros((host, config.row_floats), np.float32))
    storage = None
    if backend is not None:
        layout = StorageLayout(model=config.model, dtype="float32", page_size=config.page_size,
                               component="full", layers=(0, 1), row_shape=(config.row_floats,))
        storage = StorageTier(layouts=(layout,), prefetch_threshold=config.prefetch_threshold,
                              wait_policy=config.wait_policy)
    cache = PrefixCache(CacheConfig(
        capacity=device, page_size=config.page_size, lost_hits=False,
        host=HostTier(capacity=host, write_policy=config.write_policy), storage=storage),
        copies, storage=backend)
    return Engine(cache, rows)


def serve(engine: Engine, tokens: np.ndarray, config: StorageBenchConfig) -> int:
    """One request (see the module's docstring); returns the tokens it found cached. A
    load-back that fails (it cannot here: the copy engine never fails) would be admitted
    again without load-back."""
    cache = engine.cache
    lease = cache.admit(tokens, load_back=True)
    cache.wait(lease)
    if lease.state is LeaseState.FAILED:
        lease = cache.admit(tokens)
    cached = lease.cached_length
    rows = kv_rows(tokens, config.row_floats)
    if config.verify and not np.array_equal(engine.device[lease.slots[:cached]], rows[:cached]):
        raise InvariantError(f"the cached rows of a {len(tokens)}-token prompt are wrong")
    engine.device[lease.slots[cached:]] = rows[cached:]
    cache.finish(lease)
    cache.poll()
    if config.verify:
        cache.check_invariants()
    return cached


def storage_numbers(stats: StorageTierStats | None) -> dict[str, Any]:
    """What ``stats().storage`` says (empty without L3)."""
    if stats is None:
        return {}
    b = stats.backend
    return {"prefetches": stats.prefetches, "restores": stats.restores,
            "restored_tokens": stats.restored_tokens, "hit_pages": stats.hit_pages,
            "misses": stats.misses, "no_room": stats.no_room,
            "written_pages": stats.written_pages, "failed_pages": stats.failed_pages,
            "read_bytes": b.read_bytes, "written_bytes": b.written_bytes,
            "read_s": b.read_seconds, "write_s": b.write_seconds,
            "exists_s": b.exists_seconds, "exists_calls": b.exists_calls,
            "faults": b.total_faults}


def run_engine(name: str, engine: Engine, prompts: Sequence[np.ndarray],
               config: StorageBenchConfig) -> EngineRun:
    """Serve ``prompts`` in order on ``engine``; its L3 writes land (and count) before it
    closes, so the next engine finds them."""
    run = EngineRun(name)
    cache = engine.cache
    start = time.perf_counter()
    for number, tokens in enumerate(prompts, 1):
        run.hit_tokens += serve(engine, tokens, config)
        run.prompt_tokens += len(tokens)
        run.requests += 1
        if config.progress_every and number % config.progress_every == 0:
            progress(run, len(prompts), time.perf_counter() - start)
    cache.wait()
    if cache.storage is not None:
        cache.storage.settle()
    run.wall_s = time.perf_counter() - start
    stats = cache.stats()
    run.storage = storage_numbers(stats.storage)
    run.failed_loads = 0 if stats.host is None else stats.host.failed_loads
    cache.close()
    return run


def progress(run: EngineRun, total: int, elapsed: float) -> None:
    print(f"  {run.name}: {run.requests}/{total} requests, {run.prompt_tokens:,} prompt "
          f"tokens, hit {100 * run.hit_rate:.1f}%, {elapsed:.1f} s", file=sys.stderr,
          flush=True)


def capacities(config: StorageBenchConfig, prompts: Sequence[np.ndarray]) -> tuple[int, int]:
    """Device and host slots for engines serving ``prompts``: shares of the tokens a tree
    of all of them holds (measured on a throw-away unbounded cache), at least twice the
    longest prompt."""
    page = config.page_size
    total = -(-sum(len(p) for p in prompts) // page) * page
    probe = PrefixCache(CacheConfig(capacity=total, page_size=page, lost_hits=False))
    for tokens in prompts:
        probe.finish(probe.admit(tokens))
    held = probe.stats().components["full"].cached
    longest = max(len(p) for p in prompts)
    device = max(2 * longest, int(held * config.device_share))
    host = max(2 * longest, int(held * config.host_share))
    return -(-device // page) * page, -(-host // page) * page


def run_pair(config: StorageBenchConfig, first: Sequence[np.ndarray],
             second: Sequence[np.ndarray],
             open_store: Callable[[], StorageBackend]) -> tuple[list[EngineRun], int, int]:
    """Engine 1 serves ``first``; engine 2 (fresh, same store) and the control (no L3)
    serve ``second``. Returns the three runs and the device and host slots."""
    device, host = capacities(config, second)
    runs = []
    for name, backend, prompts in (("engine 1", open_store(), first),
                                   ("engine 2", open_store(), second),
                                   ("engine 2 without L3", None, second)):
        runs.append(run_engine(name, make_engine(config, device, host, backend), prompts,
                               config))
    return runs, device, host
