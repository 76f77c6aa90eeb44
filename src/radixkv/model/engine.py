"""Engine: runs requests of the reference model through a PrefixCache like a scheduler.

Per request: ``admit`` the prompt reusing at most all tokens but the last (its logits are
needed, so it is always computed: ``admit(prompt, max_match=len(prompt) - 1)``); copy the cached
recurrent state into the request's own state slot (or zero it); prefill the rest in chunks
of ``chunk`` tokens, saving states where the cache hints (``checkpoint``) and committing
after each chunk; then decode greedily: sample from the last logits, release the SWA slots
that left the window (``slide_window``, only once every token so far is computed), extend by
the sampled token and compute it, saving a state every ``mamba_track_interval`` tokens (and
committing it); ``finish``. The last sampled token is never fed back: the cache only ever
holds KV that was computed.

Up to ``max_running`` requests run interleaved, round-robin, one prefill chunk or one
decode token each per tick; a turn of a chat is admitted once the previous turn finished.
When the cache runs out of slots mid-request, that request is aborted and requeued
(preempted) and admission pauses until a running request finishes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..cache import Lease, PrefixCache
from ..errors import ConfigError, OutOfSlotsError
from .decoder import Decoder, TokenSlots
from .memory import Memory, PoolSizes
from .requests import RequestRecord, RequestSpec, check_workload, resolve_prompt

Progress = Callable[[int, int], None]
"""Called with (finished requests, total requests)."""


@dataclass
class EngineStats:
    """``window_misses``: token steps whose attention window reached before the SWA slots
    the cache lent (the engine then reads slot 0, like a stale page-table entry; never
    happens when the cache keeps its window promise)."""

    admitted: int = 0
    preemptions: int = 0
    peak_running: int = 0
    computed_tokens: int = 0
    window_misses: int = 0


class _Running:
    """A request between admission and finish."""

    __slots__ = ("computed", "hints", "lease", "record", "sequence")

    def __init__(self, lease: Lease, record: RequestRecord) -> None:
        self.lease, self.record = lease, record
        self.sequence = list(record.prompt)
        self.computed = lease.cached_length
        self.hints = frozenset(lease.checkpoint_hints)


class Engine:
    """The reference engine over one decoder and one cache (see the module docstring)."""

    def __init__(
        self, decoder: Decoder, cache: PrefixCache, *, chunk: int = 32, max_running: int = 4
    ) -> None:
        if chunk < 1 or max_running < 1:
            raise ConfigError("chunk and max_running must be >= 1")
        config = cache.config
        self.has_swa = "swa" in config.names
        self.has_mamba = "mamba" in config.names
        if "ssm" in decoder.config.layers and not self.has_mamba:
            raise ConfigError("a model with SSM layers needs a cache with the 'mamba' component")
        self.decoder, self.cache = decoder, cache
        self.chunk, self.max_running = chunk, max_running
        self.window = decoder.config.window
        self.interval = config.mamba_track_interval or 0
        swa = config.swa_capacity if config.swa_capacity is not None else config.capacity
        self.memory = Memory(decoder.config, PoolSizes(
            full=config.capacity, swa=swa if self.has_swa else config.capacity,
            states=config.mamba_states if self.has_mamba else 0))
        self.stats = EngineStats()
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
        while pending or running:
            self._admit(pending, running, done)
            if not running:  # cannot happen: check_workload orders parents first
                raise RuntimeError("no pending request can be admitted")
            for run in list(running):
                if self._tick(run, running, pending):
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
                run = self._start(spec, resolve_prompt(spec, done))
            except OutOfSlotsError:
                if not running:
                    raise
                break
            pending.remove(spec)
            running.append(run)
        self.stats.peak_running = max(self.stats.peak_running, len(running))

    def _tick(self, run: _Running, running: list[_Running], pending: list[RequestSpec]) -> bool:
        """Advance ``run`` by one step; True when it finished."""
        try:
            finished = self._advance(run)
        except OutOfSlotsError:
            if len(running) == 1:
                raise
            self.cache.abort(run.lease)
            running.remove(run)
            pending.insert(0, run.record.spec)
            self.stats.preemptions += 1
            self._paused = True
            return False
        if finished:
            self.cache.finish(run.lease)
            running.remove(run)
            self._paused = False
        return finished

    # ------------------------------------------------------------------ one request

    def _start(self, spec: RequestSpec, prompt: tuple[int, ...]) -> _Running:
        lease = self.cache.admit(prompt, max_match=len(prompt) - 1)
        self.stats.admitted += 1
        self._attempts[spec.rid] = self._attempts.get(spec.rid, 0) + 1
        record = RequestRecord(
            spec, prompt, reused=lease.cached_length,
            swa_reused=max(0, lease.cached_length - lease.swa_start) if self.has_swa else 0,
            state_reused=lease.copy_state_from is not None,
            attempts=self._attempts[spec.rid],
        )
        self._start_state(lease)
        return _Running(lease, record)

    def _start_state(self, lease: Lease) -> None:
        """Copy-on-write: the request starts from a copy of the cached state (or zeros)."""
        if lease.state_slot is None:
            return
        if lease.copy_state_from is None:
            self.memory.zero_state(lease.state_slot)
        else:
            self.memory.copy_state(lease.copy_state_from, lease.state_slot)

    def _advance(self, run: _Running) -> bool:
        prompt_length = len(run.record.prompt)
        if run.computed < prompt_length:
            end = min(run.computed + self.chunk, prompt_length)
            for position in range(run.computed, end):
                self._compute(run, position)
            self.cache.commit(run.lease, end)
            return False
        return self._decode(run)

    def _decode(self, run: _Running) -> bool:
        token = int(np.argmax(run.record.logits[-1]))
        run.record.outputs.append(token)
        if len(run.record.outputs) == run.record.spec.decode:
            return True
        if self.has_swa:
            self.cache.slide_window(run.lease)
        self.cache.extend(run.lease, [token])
        run.sequence.append(token)
        if self._compute(run, len(run.sequence) - 1):
            self.cache.commit(run.lease, run.computed)
        return False

    def _compute(self, run: _Running, position: int) -> bool:
        """Run the token at ``position``; True when its state was saved (a checkpoint)."""
        lease = run.lease
        slots = TokenSlots(
            full=lease.slots[: position + 1],
            window=self._window(lease, position),
            state=-1 if lease.state_slot is None else lease.state_slot,
        )
        row = self.decoder.step(self.memory, run.sequence[position], position, slots)
        run.record.logits.append(row)
        run.computed = position + 1
        self.stats.computed_tokens += 1
        return self._checkpoint(run)

    def _window(self, lease: Lease, position: int) -> np.ndarray:
        """Slots of positions ``max(0, position - W) .. position`` for SWA layers."""
        low = max(0, position - self.window)
        if not self.has_swa:
            return lease.slots[low : position + 1]
        start = lease.swa_start
        lent = lease.swa_slots[max(0, low - start) : position + 1 - start]
        if low >= start:
            return lent
        self.stats.window_misses += 1
        return np.concatenate((np.zeros(start - low, dtype=np.int64), lent))

    def _checkpoint(self, run: _Running) -> bool:
        """Save the state after ``run.computed`` tokens where the cache hints, and every
        track interval from the end of the prompt on."""
        lease, done = run.lease, run.computed
        if not self.has_mamba or done <= lease.tree_owned or lease.state_slot is None:
            return False
        at_interval = done >= len(run.record.prompt) and done % self.interval == 0
        if done not in run.hints and not at_interval:
            return False
        slot = self.cache.checkpoint(lease, done)
        self.memory.copy_state(lease.state_slot, slot)
        return True
