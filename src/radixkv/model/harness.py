"""The exactness harness: a cached run compared, logit by logit, with an uncached one.

:func:`verify` runs a workload through :class:`Engine` over a :class:`PrefixCache`, then
runs every request's prompt from scratch (:mod:`reference`) and checks that every logits
row the engine computed has exactly the same bits as the uncached row of that position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..cache import CacheConfig, PrefixCache
from ..host import NumpyCopyConfig, NumpyCopyEngine
from ..host.host_stats import HostStats
from ..progress import Progress
from ..storage import StorageBackend, StorageTierStats
from .engine import Engine, EngineStats
from .host import register_buffers
from .memory import Memory, engine_memory, state_component
from .reference import Reference
from .requests import RequestRecord, RequestSpec


@dataclass(frozen=True)
class Mismatch:
    """A request whose logits differ from the uncached run: ``rows`` positions differ
    (the first at ``position``), by at most ``max_diff``; ``outputs`` whether the greedy
    tokens differ too."""

    rid: int
    rows: int
    position: int
    max_diff: float
    outputs: bool


@dataclass
class GroupVerdict:
    """Totals of one request group and whether all its requests matched."""

    group: str
    requests: int = 0
    prompt_tokens: int = 0
    reused: int = 0
    compared_rows: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.mismatches


@dataclass
class VerifyReport:
    """Verdicts per group (in first-arrival order) and what the cache and engine did, per
    component name (``units[name]``: ``"tokens"`` or ``"states"``).

    ``reused``: what each component lent at admission (see :attr:`RequestRecord.lent`): FULL
    prompt tokens of KV, a windowed component's tokens of window KV, MAMBA recurrent states
    (each skipping a whole prefix). ``evicted``: what eviction freed, for any reason;
    ``pressure``: of that, what the component's own pool running short took (not a cascade
    or a node's removal). ``tombstones``: per windowed component, the most nodes seen (after
    a request finished) that kept their FULL KV but had lost this component's.

    ``hit_tokens``: prompt tokens every admission reused (the cache's
    ``stats().hit_tokens``, reruns of preempted or failed requests included); ``host``:
    the host tier's stats (``None`` without one), whose ``host_hit_tokens`` are the part of
    ``hit_tokens`` only host values made usable, copied back (:attr:`host_share`).
    """

    groups: list[GroupVerdict]
    reused: dict[str, int]
    evicted: dict[str, int]
    pressure: dict[str, int]
    tombstones: dict[str, int]
    units: dict[str, str]
    engine: EngineStats
    prompt_tokens: int
    reused_tokens: int
    hit_tokens: int = 0
    host: HostStats | None = None
    storage: StorageTierStats | None = None

    @property
    def passed(self) -> bool:
        return all(group.passed for group in self.groups)

    @property
    def reuse_share(self) -> float:
        """Share of prompt tokens whose KV came from the cache."""
        return self.reused_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def host_share(self) -> float:
        """Share of the reused tokens (``hit_tokens``) that came back from host memory."""
        if self.host is None or not self.hit_tokens:
            return 0.0
        return self.host.host_hit_tokens / self.hit_tokens

    @property
    def storage_share(self) -> float:
        """Share of prompt tokens restored from the storage tier (L3)."""
        if self.storage is None or not self.prompt_tokens:
            return 0.0
        return self.storage.restored_tokens / self.prompt_tokens


def compare(record: RequestRecord, reference: Reference) -> Mismatch | None:
    """Compare every row the engine computed for ``record`` with the uncached run of the
    same prompt, bit for bit; ``None`` when all are identical."""
    expected = reference(record.prompt, record.spec.decode)
    computed = np.array(record.logits, dtype=np.float64)
    wanted = expected.logits[record.first :]
    same_outputs = tuple(record.outputs) == expected.outputs
    if computed.shape == wanted.shape and computed.tobytes() == wanted.tobytes() and same_outputs:
        return None
    if computed.shape != wanted.shape:
        return Mismatch(record.spec.rid, len(wanted), record.first, float("inf"), True)
    differ = np.any(computed.view(np.int64) != wanted.view(np.int64), axis=1)
    first = int(np.argmax(differ)) if differ.any() else 0
    with np.errstate(invalid="ignore"):
        diff = float(np.max(np.abs(computed - wanted)))
    return Mismatch(record.spec.rid, int(differ.sum()), record.first + first, diff,
                    not same_outputs)


def verdicts(records: Sequence[RequestRecord], reference: Reference,
             progress: Progress | None = None) -> list[GroupVerdict]:
    """Compare every record; group the results."""
    groups: dict[str, GroupVerdict] = {}
    for index, record in enumerate(records):
        verdict = groups.setdefault(record.spec.group, GroupVerdict(record.spec.group))
        verdict.requests += 1
        verdict.prompt_tokens += len(record.prompt)
        verdict.reused += record.reused
        verdict.compared_rows += len(record.logits)
        mismatch = compare(record, reference)
        if mismatch is not None:
            verdict.mismatches.append(mismatch)
        if progress is not None:
            progress(index + 1, len(records))
    return list(groups.values())


def _reused(records: Sequence[RequestRecord], names: Sequence[str]) -> dict[str, int]:
    return {name: sum(record.lent[name] for record in records) for name in names}


def tombstones(cache: PrefixCache) -> dict[str, int]:
    """Per windowed component, the nodes that hold FULL (primary) KV but not its own; O(nodes)."""
    found: dict[str, int] = {}
    primary = next(index for index, spec in enumerate(cache.config.specs) if spec.primary)
    nodes = [node for node in cache.tree.nodes.values()
             if node.parent is not None and cache.tree.has(node, primary)]
    for index, spec in enumerate(cache.config.specs):
        if spec.windowed:
            found[spec.name] = sum(not cache.tree.has(node, index) for node in nodes)
    return found


def verify(
    reference: Reference,
    cache_config: CacheConfig,
    specs: Sequence[RequestSpec],
    *,
    chunk: int = 32,
    max_running: int = 4,
    engine: type[Engine] = Engine,
    progress: Progress | None = None,
    copies: NumpyCopyConfig | None = None,
    copy_engine: type[NumpyCopyEngine] = NumpyCopyEngine,
    storage: StorageBackend | None = None,
) -> VerifyReport:
    """Run ``specs`` with a fresh cache of ``cache_config`` and check them against the
    uncached runs of ``reference``'s decoder; audits the cache (``check_invariants``) each
    time a request finishes. ``engine`` may be a subclass (e.g. a deliberately broken one).
    ``progress`` sees the cached run's requests finish, then their comparisons, out of
    twice the number of requests. With a host tier in ``cache_config``, the cache moves
    the engine's KV through a ``copy_engine`` (a subclass may be a broken one) built with
    ``copies`` (default: every copy lands at the next poll). With a storage tier, the
    cache reads and writes L3 pages in ``storage`` (the engine's host buffers are
    registered before the cache is built); the cache is closed at the end, which waits
    for its writes and closes ``storage``. Raises :class:`ConfigError` when the storage
    tier and ``storage`` are not both given."""
    cache, memory = _cache(reference, cache_config, copy_engine(copies), storage)
    try:
        runner = engine(reference.decoder, cache, chunk=chunk, max_running=max_running,
                        memory=memory)
        return _run(runner, specs, reference, progress)
    finally:
        cache.close()


def _cache(reference: Reference, config: CacheConfig, copier: NumpyCopyEngine,
           storage: StorageBackend | None) -> tuple[PrefixCache, Memory | None]:
    """The cache of a run; with a storage tier, also the engine's device buffers, whose
    host buffers the copy engine must expose before the cache is built."""
    if config.storage is None or storage is None:
        return PrefixCache(config, copier, storage=storage), None
    model = reference.decoder.config
    memory = engine_memory(model, config)
    register_buffers(copier, config, memory, state_component(model, config))
    return PrefixCache(config, copier, storage=storage), memory


def _run(runner: Engine, specs: Sequence[RequestSpec], reference: Reference,
         progress: Progress | None) -> VerifyReport:
    cache = runner.cache
    total = 2 * len(specs)
    peak = dict.fromkeys(tombstones(cache), 0)

    def ran(done: int, _: int) -> None:
        cache.check_invariants()
        for name, count in tombstones(cache).items():
            peak[name] = max(peak[name], count)
        if progress is not None:
            progress(done, total)

    def checked(done: int, _: int) -> None:
        if progress is not None:
            progress(len(specs) + done, total)

    records = runner.run(specs, ran)
    if cache.storage is not None:
        cache.storage.settle()  # every write landed: the stats count them
    cache.check_invariants()
    final = cache.stats()
    stats = final.components
    names = cache.config.names
    return VerifyReport(
        groups=verdicts(records, reference, checked),
        reused=_reused(records, names),
        evicted={name: sum(stats[name].evicted.values()) for name in names},
        pressure={name: stats[name].evicted.get("budget", 0) for name in names},
        tombstones=peak,
        units={name: "tokens" if runner.per_token[name] else "states" for name in names},
        engine=runner.stats,
        prompt_tokens=sum(len(record.prompt) for record in records),
        reused_tokens=sum(record.reused for record in records),
        hit_tokens=final.hit_tokens,
        host=final.host,
        storage=final.storage,
    )
