"""simulate(): requests through one or more SimEngines behind a router.

Events are processed in time order: the next arrival, or a step of the engine whose clock
is earliest. A request that has a ``parent`` (the next turn of a chat) arrives ``delay``
seconds after its parent finished. With several engines an arrival is handed to its engine
at that engine's next step boundary, which may be up to one step (or decode jump) after
the arrival time: engines, like real ones, only schedule between steps.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import itertools
import math
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from ..driver import check_workload
from ..progress import Progress
from .engine import EngineConfig, SimEngine
from .jobs import Job
from .keys import PrefixIndex, SequenceKeys, TimedPrefixIndex, namespace_salt
from .records import RequestRecord
from .requests import SimRequest, cached_parts

ROUTERS = ("round-robin", "least-loaded", "kv-aware")
"""``round-robin``: engines in turn. ``least-loaded``: fewest requests queued or running,
then fewest prompt tokens still to prefill. ``kv-aware``: least prefill work, counting the
request's own uncached tokens (its prompt less the prefix the engine's cache holds, as the
engine's KV events tell it) plus the engine's queued prefill tokens."""


@dataclass(frozen=True)
class SimConfig:
    engine: EngineConfig
    engines: int = 1
    router: str = "round-robin"

    def __post_init__(self) -> None:
        if self.router not in ROUTERS:
            raise ValueError(f"unknown router {self.router!r}; choose from {', '.join(ROUTERS)}")
        if self.engines < 1:
            raise ValueError("engines must be >= 1")


@dataclass
class SimResult:
    config: SimConfig
    records: list[RequestRecord]
    engines: list[SimEngine]
    wall_seconds: float

    @property
    def sim_seconds(self) -> float:
        return max(engine.now for engine in self.engines)


class _Router:
    def __init__(self, name: str, engines: list[SimEngine]) -> None:
        self.name, self.engines = name, engines
        self._turn = itertools.count()

    def pick(self, job: Job) -> SimEngine:
        engines = self.engines
        if len(engines) == 1:
            return engines[0]
        if self.name == "round-robin":
            return engines[next(self._turn) % len(engines)]
        if self.name == "least-loaded":
            return min(engines, key=lambda e: (len(e.running) + len(e.waiting),
                                               e.pending_tokens(), e.index))
        return min(engines, key=lambda e: (self._uncached(e, job) + e.pending_tokens(), e.index))

    @staticmethod
    def _uncached(engine: SimEngine, job: Job) -> int:
        assert engine.resident is not None
        return job.prompt_len - engine.resident.longest(job.keys)


def simulate(requests: Sequence[SimRequest], config: SimConfig,
             progress: Progress | None = None) -> SimResult:
    """Run every request; return their records (in ``requests`` order) and the engines (with
    their caches, for inspection). Raises ``ValueError`` on a malformed workload."""
    requests = list(requests)
    check_workload(requests)
    started = time.perf_counter()
    engine_config = config.engine
    if config.router == "kv-aware" and config.engines > 1 and not engine_config.events:
        engine_config = replace(engine_config, events=True)
    shared = TimedPrefixIndex(engine_config.cache.page_size) if config.engines > 1 else None
    engines = [SimEngine(engine_config, index, shared) for index in range(config.engines)]
    with _collector_off():
        run = _Run(requests, engines, _Router(config.router, engines), progress)
        run.loop()
    return SimResult(config, run.records, engines, time.perf_counter() - started)


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    """Run without Python's cyclic garbage collector (switched back on after, if it was
    on). A simulation makes no cyclic garbage: everything it drops is freed by reference
    counting (the tests check it), while the cycles it keeps (tree nodes, engines) live to
    its end and are collected after. The collector only ever scanned live objects: at a
    generation-0 threshold of 10,000 a bench sim round still paid 4-5 young collections
    (3-6 ms each) and, every other round, a middle one (80-100 ms, up to 7% of that round).
    A ``progress`` callback that makes cyclic garbage keeps it until the run ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Run:
    """The event loop of one simulation."""

    def __init__(self, requests: list[SimRequest], engines: list[SimEngine], router: _Router,
                 progress: Progress | None) -> None:
        self.engines, self.router, self.progress = engines, router, progress
        self.cache = engines[0].cache
        self.page = engines[0].page
        self.records = [RequestRecord(r.rid, r.arrival, len(r.prompt), len(r.output),
                                      turn=_turn(r)) for r in requests]
        self._record = {r.rid: (index, record)
                        for index, (r, record) in enumerate(zip(requests, self.records))}
        self.keys = SequenceKeys([cached_parts(r) for r in requests], self.page)
        self.children: dict[int, list[SimRequest]] = defaultdict(list)
        self.arrivals: list[tuple[float, int, SimRequest]] = []
        for request in requests:
            if request.parent is None:
                heapq.heappush(self.arrivals, (request.arrival, request.rid, request))
            else:
                self.children[request.parent].append(request)
        self.seen = PrefixIndex(self.page)
        spaces = any(r.namespace is not None for r in requests)
        self.seen_any = PrefixIndex(self.page) if spaces else None
        self.done = 0
        self._salts: dict[object, int] = {}  # namespace -> its key salt

    def loop(self) -> None:
        arrivals, engines = self.arrivals, self.engines
        only = engines[0] if len(engines) == 1 else None
        while True:
            if only is not None:  # bench sim: one engine, no list or key function per event
                engine = only if only.running or only.waiting else None
            else:
                busy = [engine for engine in engines if engine.busy]
                engine = min(busy, key=lambda e: e.now) if busy else None
            next_arrival = arrivals[0][0] if arrivals else math.inf
            if engine is not None and engine.now < next_arrival:
                for job in engine.step(next_arrival):
                    self._finished(job, engine.now)
            elif arrivals:
                arrival, _, request = heapq.heappop(arrivals)
                self._arrive(request, arrival)
            else:
                return

    def _arrive(self, request: SimRequest, now: float) -> None:
        index, record = self._record[request.rid]
        record.arrival = now
        space = self.cache.namespace_of(request.namespace)
        salt = self._salts.get(space)
        if salt is None:
            salt = self._salts[space] = namespace_salt(space)
        job = Job(request, record, self.keys.of(index, salt), self.page, salt)
        keys = job.keys
        job.seen = self.seen.longest(keys)
        # bench sim: only the keys past the seen prefix are new (the index is closed under
        # prefixes); adding every key of every prompt was a fifth of the run
        self.seen.add(keys[job.seen // self.page :])
        job.seen_any = job.seen
        if self.seen_any is not None:
            plain = keys if not salt else self.keys.of(index)[: len(keys)]
            job.seen_any = self.seen_any.longest(plain)
            self.seen_any.add(plain[job.seen_any // self.page :])
        self.router.pick(job).submit(job, now)

    def _finished(self, job: Job, now: float) -> None:
        if job.request.cache_output and not job.record.rejected:
            self.seen.add(job.sequence_keys[len(job.keys) :])  # its answer, wherever it ran
        for child in self.children.pop(job.request.rid, ()):
            heapq.heappush(self.arrivals, (now + child.delay, child.rid, child))
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, len(self.records))


def _turn(request: SimRequest) -> int | None:
    turn = request.tags.get("turn")
    return turn if isinstance(turn, int) else None
