"""Engine: runs requests of the reference model through a PrefixCache like a scheduler.

It drives any component combination alike, by component name: each attention layer kind
reads the slots of the cache component that holds its KV (:data:`LAYER_COMPONENTS`; the
primary FULL slots when the cache has no such component), from the lease's per-component
view (``slots_of(name)`` from ``start_of(name)``).

Its cache calls are :class:`~radixkv.driver.RequestSteps`' (the simulator makes the same
ones), with the engine's device memory as the state memory: prompts are prefilled in chunks
of ``chunk`` tokens, computed token by token, and decoded greedily, one token a stretch
(sample from the last logits, make room for the token, compute it, save the state at a
track interval). The last sampled token is never fed back: the cache only ever holds KV
that was computed.

Up to ``max_running`` requests run interleaved, round-robin, one prefill chunk or one
decode token each per tick; a turn of a chat is admitted once the previous turn finished.
When the cache runs out of slots mid-request (a state that finds no free slot included),
that request is aborted and requeued (preempted) and admission pauses until a running
request finishes.

With a host tier (``CacheConfig(host=...)``), the engine registers its device buffers and
host buffers of the same rows with the cache's :class:`~radixkv.host.NumpyCopyEngine`
(:mod:`radixkv.model.host`), admits with ``load_back=True`` and polls the cache once per
scheduler step (``cache.poll()``). A request whose lease is not ready yet (its prefix is
being copied back from host memory) is skipped until a poll reports it ready; only then is
the cached state copied into its working slot and anything computed. A request whose
load-back failed (lease ``FAILED``, everything it held freed) is admitted again.

With a storage tier (L3) as well, see :mod:`radixkv.model.l3_steps`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..cache import Lease, LeaseState, PrefixCache
from ..driver import RequestState, RequestSteps, check_workload
from ..errors import ConfigError, OutOfSlotsError
from ..progress import Progress
from .decoder import Decoder, TokenSlots
from .host import attach_host
from .l3_steps import StorageSteps
from .memory import Memory, engine_memory, sources, state_component
from .requests import RequestRecord, RequestSpec, resolve_prompt


@dataclass
class EngineStats:
    """``window_misses``: token steps of an attention layer kind whose span reached before
    the slots the cache lent for its component (the engine then reads slot 0 there, like a
    stale page-table entry; never happens when the cache keeps its window promise).
    ``load_waits``: scheduler steps a running request skipped waiting for its load-back;
    ``failed_loads``: admissions whose load-back failed (the request was admitted again);
    ``storage_waits``: times the pools were short with nothing else running (nothing to
    preempt) and the engine waited for the L3 prefetches in flight, which pin the
    prefixes they restore below, before trying again."""

    admitted: int = 0
    preemptions: int = 0
    peak_running: int = 0
    computed_tokens: int = 0
    window_misses: int = 0
    load_waits: int = 0
    failed_loads: int = 0
    storage_waits: int = 0


class _Running(RequestState):
    """A request between admission and finish: its record and its tokens so far."""

    __slots__ = ("ready", "record", "sequence")

    def __init__(self, spec: RequestSpec, prompt: tuple[int, ...]) -> None:
        super().__init__(len(prompt), spec.decode - 1)
        self.record = RequestRecord(spec, prompt)
        self.sequence = list(prompt)
        self.ready = False
        """Whether the lease was ready and the request's state set up (it may compute)."""

    @property
    def held(self) -> Lease:
        """Its lease (it holds one from admission to finish)."""
        assert self.lease is not None
        return self.lease


class Engine:
    """The reference engine over one decoder and one cache (see the module docstring)."""

    def __init__(
        self, decoder: Decoder, cache: PrefixCache, *, chunk: int = 32, max_running: int = 4,
        memory: Memory | None = None,
    ) -> None:
        if chunk < 1 or max_running < 1:
            raise ConfigError("chunk and max_running must be >= 1")
        config, model = cache.config, decoder.config
        self.decoder, self.cache, self.model = decoder, cache, model
        self.chunk, self.max_running = chunk, max_running
        self.sources = sources(model, config)
        """The cache component whose slots each attention layer kind reads."""
        self.per_token = {side.component.name: side.per_token for side in cache.sides}
        self.memory = engine_memory(model, config) if memory is None else memory
        """The device buffers (given when a storage tier needed them before the cache)."""
        self.host_buffers = attach_host(cache, self.memory, state_component(model, config))
        """The host buffers the copy engine moves rows to and from, by component name."""
        self.steps = RequestSteps(cache, states=self.memory, skip_unsaved=False)
        self.stats = EngineStats()
        self.l3 = StorageSteps(cache, max_running, self.stats)
        """The engine's steps with a storage tier (prefetch ahead, wait for pinning ones)."""
        self._attempts: dict[int, int] = {}
        self._paused = False

    # ------------------------------------------------------------------ scheduling

    def run(
        self, specs: Sequence[RequestSpec], progress: Progress | None = None
    ) -> list[RequestRecord]:
        """Run every request; return their records in ``specs`` order. ``stats`` add up
        over runs."""
        check_workload(specs)
        pending, running = list(specs), list[_Running]()
        done: dict[int, RequestRecord] = {}
        self._attempts, self._paused = {}, False
        self.l3.prefetched.clear()
        while pending or running:
            self.l3.prefetch(pending, done)
            self._admit(pending, running, done)
            if not running:  # cannot happen: check_workload orders parents first
                raise RuntimeError("no pending request can be admitted")
            self._poll(running, pending)
            for run in list(running):
                if not run.ready:
                    self.stats.load_waits += 1
                elif self._tick(run, running, pending):
                    done[run.record.spec.rid] = run.record
                    if progress is not None:
                        progress(len(done), len(specs))
        return [done[spec.rid] for spec in specs]

    def _admit(
        self, pending: list[RequestSpec], running: list[_Running], done: dict[int, RequestRecord]
    ) -> None:
        for spec in list(pending):
            if self._paused or len(running) >= self.max_running:
                break
            if spec.parent is not None and spec.parent not in done:
                continue
            try:
                prompt = resolve_prompt(spec, done)
                run = self.l3.start_or_wait(partial(self._start, spec, prompt), running)
            except OutOfSlotsError:
                if not running:
                    raise
                # each attempt asks the store again: with L3, wait for a finish first
                self._paused = self.cache.storage is not None
                break
            pending.remove(spec)
            running.append(run)
        self.stats.peak_running = max(self.stats.peak_running, len(running))

    def _poll(self, running: list[_Running], pending: list[RequestSpec]) -> None:
        """Apply the copies the cache's host tier acknowledged: start the requests whose
        lease became ready; requeue (first in line) those whose load-back failed."""
        if self.cache.host is None:
            return
        by_lease = {run.held.id: run for run in running}
        for lease in self.cache.poll():
            run = by_lease.get(lease.id)
            if run is None or run.lease is not lease:
                continue
            if lease.state is LeaseState.FAILED:
                running.remove(run)
                pending.insert(0, run.record.spec)
                self.stats.failed_loads += 1
            elif lease.ready and not run.ready:
                self._ready(run)

    def _ready(self, run: _Running) -> None:
        """The lease's prefix is in place: copy its state in; the request may compute."""
        self.steps.start(run)
        run.ready = True

    def _tick(self, run: _Running, running: list[_Running], pending: list[RequestSpec]) -> bool:
        """Advance ``run`` by one step; True when it finished."""
        try:
            finished = self._advance(run)
        except OutOfSlotsError:
            if len(running) == 1:
                if self.l3.wait_for_storage():
                    return False  # the next tick tries again
                raise
            self.steps.abort(run)
            running.remove(run)
            pending.insert(0, run.record.spec)
            self.stats.preemptions += 1
            self._paused = True
            return False
        if finished:
            self.steps.finish(run)
            running.remove(run)
            self._paused = False
        return finished

    # ------------------------------------------------------------------ one request

    def _start(self, spec: RequestSpec, prompt: tuple[int, ...]) -> _Running:
        run = _Running(spec, prompt)
        lease = self.steps.admit(run, prompt)
        self.stats.admitted += 1
        record = run.record
        record.attempts = self._attempts[spec.rid] = self._attempts.get(spec.rid, 0) + 1
        record.reused = lease.cached_length
        record.lent = {name: self._lent(lease, name) for name in self.per_token}
        if lease.ready:
            self._ready(run)
        return run

    def _lent(self, lease: Lease, name: str) -> int:
        """What component ``name`` lent at admission: tokens of KV, or 1 for a state."""
        if self.per_token[name]:
            return max(0, lease.cached_length - lease.start_of(name))
        return int(lease.copy_state_from is not None)

    def _advance(self, run: _Running) -> bool:
        if run.computed < run.prompt_len:
            end = min(run.computed + self.chunk, run.prompt_len)
            self.steps.prefill(run, end, self._prefill_to)
            return False
        return self._decode(run)

    def _prefill_to(self, run: _Running, stop: int) -> None:
        """Compute the prompt from ``run.computed`` up to ``stop`` (the steps call it)."""
        for position in range(run.computed, stop):
            self._compute(run, position)

    def _decode(self, run: _Running) -> bool:
        token = int(np.argmax(run.record.logits[-1]))
        outputs = run.record.outputs
        if run.fed == run.feeds:
            outputs.append(token)
            return True
        self.steps.reserve(run, 1, (*outputs, token))  # may raise: the step is then tried again
        position = len(run.sequence)
        outputs.append(token)
        run.sequence.append(token)
        self._compute(run, position)
        run.fed += 1
        self.steps.decoded(run, position, 1)
        return False

    def _compute(self, run: _Running, position: int) -> None:
        """Run the token at ``position``."""
        lease = run.held
        kv = {kind: self._span(lease, kind, position) for kind in self.sources}
        slots = TokenSlots(kv=kv, state=lease.state_slot)
        row = self.decoder.step(self.memory, run.sequence[position], position, slots)
        run.record.logits.append(row)
        self.stats.computed_tokens += 1

    def _span(self, lease: Lease, kind: str, position: int) -> np.ndarray:
        """Slots of positions ``span_start(kind, position) .. position`` of the component
        layers of ``kind`` read."""
        low = self.model.span_start(kind, position)
        name = self.sources[kind]
        start = lease.start_of(name)
        lent = lease.slots_of(name)[max(0, low - start) : position + 1 - start]
        if low >= start:
            return lent
        self.stats.window_misses += 1
        return np.concatenate((np.zeros(start - low, dtype=np.int64), lent))
