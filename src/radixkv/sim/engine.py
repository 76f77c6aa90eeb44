"""SimEngine: one simulated serving engine around a real PrefixCache.

Continuous batching, as vLLM and SGLang schedule: at every step boundary the running
requests come first, every decoding request getting the memory of its next token (see
preemption below); then, unless that preempted a request, the engine admits waiting
requests first come, first served, while fewer than ``max_running`` run and the prompt
tokens still to prefill fit the step's token budget; ``admit`` evicts through the cache and
refuses (raises) when memory is short, which stops admission. So a request is admitted only
into the memory the running ones leave, never to be pushed out again in the same step. A
step then runs one token for every decoding request and prefill chunks of the others in
admission order, up to ``max_batch_tokens`` (chunked prefill). A request's first token
comes at the end of the step that finishes its prompt (TTFT); it is done after
``output_len - 1`` more decode steps.

Decode-only stretches are not simulated step by step: while nothing is prefilling, the batch
is the same from step to step until a request finishes, memory runs short or a request
arrives, so the engine jumps over ``k`` such steps at once (the time is a closed-form sum;
see :class:`DecodeBatch`); decode memory is taken ``decode_reserve`` tokens ahead, one
``extend`` per request and stretch. When the cache cannot grow a
request, the running request submitted last is preempted (the one growing, if it is that
one): aborted (its committed prompt pages stay cached) and put back at the head of the
queue; a request that cannot run even alone is rejected. Ordering by submission rather than
by admission keeps a re-admitted request from pushing out an older one, which could repeat
forever.

With a host tier (``CacheConfig(host=...)``) the cache's copies go through a
:class:`~radixkv.sim.copies.SimCopyEngine` whose copies take the cost model's
``host_bandwidth``: requests are admitted with ``load_back=True``, and one whose lease is
not ready waits (it is not prefilled) until the engine's polls see its load-back land;
when nothing else can run, the clock jumps to the next copy's completion. A wait the cache
makes inside a call (a backup that eviction needs) blocks the engine until it ends.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace

from .. import CacheConfig, PrefixCache
from ..driver import RequestSteps
from ..errors import OutOfSlotsError
from .batch import DecodeBatch
from .copies import SimCopyEngine
from .costs import CostModel
from .jobs import Job
from .keys import PrefixIndex, TimedPrefixIndex
from .records import partition
from .resident import ResidentIndex


@dataclass(frozen=True)
class EngineConfig:
    """``hints``: save MAMBA states where the cache hints (else every track interval only).
    ``events``: keep a :class:`ResidentIndex` from the cache's KV events (KV-aware routing,
    and telling FULL evictions from SWA/MAMBA losses). ``sample_every``: simulated seconds
    between memory samples. ``decode_reserve``: decode memory is allocated this many tokens
    ahead of what a request has fed (at least a page at a time, as engines do)."""

    cache: CacheConfig
    cost: CostModel
    max_batch_tokens: int = 8192
    max_running: int = 256
    hints: bool = True
    events: bool = False
    sample_every: float = 1.0
    decode_reserve: int = 128


class SimEngine:
    """See the module docstring. ``now`` is the engine's clock (simulated seconds).
    ``computed_anywhere``: the pages any engine of the cluster computed, and when each
    step that computed them ended; shared by all of them (each adds its own) to tell a
    prefix another engine had computed from one no engine had yet (``None`` with one
    engine: its own ``computed_once`` is that)."""

    def __init__(self, config: EngineConfig, index: int = 0,
                 computed_anywhere: TimedPrefixIndex | None = None) -> None:
        cache_config = replace(config.cache, events=True) if config.events else config.cache
        self.config, self.index = config, index
        self.copies = None if cache_config.host is None else SimCopyEngine(
            config.cost.host_bandwidth, lambda: self.now)
        self.cache = PrefixCache(cache_config, self.copies)
        self.ops = RequestSteps(self.cache, hints=config.hints, ahead=config.decode_reserve)
        self._mamba = self.ops.interval is not None
        self._hybrid = self._mamba or self.ops.windowed  # every decoding job grows each step
        self._jump = max(1, config.decode_reserve)  # the longest decode jump (steps)
        self.cost = config.cost
        self.page = cache_config.page_size
        self.now = 0.0
        self.waiting: deque[Job] = deque()
        self.running: dict[Job, None] = {}  # admission order
        self.prefilling: list[Job] = []
        self.batch = DecodeBatch()
        self.held_once = PrefixIndex(self.page)  # pages this cache took at least once
        # pages this engine computed: the same as held_once unless MAMBA cuts inserts
        self.computed_once = PrefixIndex(self.page) if self._mamba else self.held_once
        self.computed_anywhere = computed_anywhere
        self.resident = ResidentIndex(self.page) if config.events else None
        self.samples: list[tuple[float, ...]] = []
        self._next_sample = 0.0
        self.steps = self.preemptions = 0
        self.busy_seconds = 0.0  # simulated time spent running steps (not idle, not waiting)
        self._unprefilled = 0  # prompt tokens of running requests still to prefill
        self._waiting_tokens = 0  # prompt tokens of waiting requests
        self._submitted = 0  # requests submitted so far (each job's submission number)

    # ------------------------------------------------------------------ interface

    @property
    def busy(self) -> bool:
        return bool(self.running or self.waiting)

    def pending_tokens(self) -> int:
        """Prompt tokens still to prefill here (waiting and running): the router's load."""
        return self._waiting_tokens + self._unprefilled

    def submit(self, job: Job, now: float) -> None:
        """Queue ``job``, arrived at ``now`` (an idle engine's clock moves up to it)."""
        if not self.busy and self.now < now:
            self.now = now
        job.record.engine = self.index
        job.submission, self._submitted = self._submitted, self._submitted + 1
        job.waiting_since = now
        self.waiting.append(job)
        self._waiting_tokens += job.prompt_len

    def step(self, horizon: float) -> list[Job]:
        """Give the decoding requests their next token's memory, admit, then run one step
        (or a jump of decode steps, ending by ``horizon`` when a request arrives then);
        return the jobs that finished or were rejected."""
        done: list[Job] = []
        if self.copies is not None:
            self.cache.poll()
        preemptions = self.preemptions
        decoding = self._grow(1, done) if self.batch.members else 0
        if self.preemptions == preemptions:  # as vLLM: no admission in a step that preempts
            self._admit(done)
        if self.running:
            if not self._unprefilled:
                self._decode_jump(horizon, done)
            elif self.copies is None or self._runnable():
                self._mixed_step(decoding, done)
            else:
                self._await_copies()
            self.steps += 1
        if self.copies is not None and self.copies.blocked_until > self.now:
            self.now = self.copies.blocked_until
        if self.resident is not None:
            self._drain_events()
        if self.now >= self._next_sample:
            self._sample()
        return done

    def _runnable(self) -> bool:
        """Whether a step has work: a decoding request, or a prefill not waiting for its
        load-back."""
        return bool(self.batch.members) or any(
            job.lease is not None and job.lease.ready for job in self.prefilling)

    def _await_copies(self) -> None:
        """Every running request waits for a load-back: jump to the next completion (or, if
        the engine has reported it already to a wait inside the cache, which keeps what it
        did not wait for until the next poll, poll now)."""
        assert self.copies is not None
        self.steps -= 1  # no step ran
        end = self.copies.next_completion()
        if end is not None:
            self.now = max(self.now, end)
            return
        self.cache.poll()
        if not self._runnable():
            raise RuntimeError("every running request waits for a copy that is not in flight")

    # ------------------------------------------------------------------ admission

    def _admit(self, done: list[Job]) -> None:
        budget = self.config.max_batch_tokens - self._unprefilled
        while self.waiting and budget > 0 and len(self.running) < self.config.max_running:
            job = self.waiting[0]
            try:
                lease = self.ops.admit(job, job.request.prompt, job.request.namespace)
            except OutOfSlotsError:
                if self.running:
                    return
                self.waiting.popleft()
                self._waiting_tokens -= job.prompt_len
                self._reject(job, done)
                continue
            self.waiting.popleft()
            self._waiting_tokens -= job.prompt_len
            self._record_admission(job, lease.cached_length)
            self.running[job] = None
            self.prefilling.append(job)
            budget -= job.prompt_len - job.computed
            self._unprefilled += job.prompt_len - job.computed

    def _record_admission(self, job: Job, cached: int) -> None:
        """Record the admission of ``job`` with ``cached`` prompt tokens reused. Only what
        earlier requests had (``job.seen``) counts: after a preemption the cache also holds
        the pages this request computed itself, which are neither hits nor losses."""
        record, seen = job.record, job.seen
        hit = min(cached, seen)
        # the host's part is the prefix's end: what the cap takes comes off it first
        record.hit, record.host_hit = hit, max(0, job.host_hit - (cached - hit))
        if record.admitted is None:
            record.admitted = self.now
        if record.first_token is None:
            record.queued += self.now - job.waiting_since
        keys, resident = job.keys, None
        if self.resident is not None:
            self._drain_events()
            resident = min(self.resident.longest(keys), seen)
        held = min(self.held_once.longest(keys), seen)
        computed = held if self.computed_once is self.held_once else min(
            self.computed_once.longest(keys), seen)
        elsewhere = computed if self.computed_anywhere is None else min(
            self.computed_anywhere.longest(keys, self.now), seen)
        bounds = (resident, held, computed, elsewhere, seen, job.seen_any)
        record.losses = partition(job.prompt_len, self.page, hit, bounds)

    def _reject(self, job: Job, done: list[Job]) -> None:
        job.record.rejected = True
        job.record.finished = self.now
        done.append(job)

    # ------------------------------------------------------------------ steps

    def _mixed_step(self, decoding: int, done: list[Job]) -> None:
        """One step of ``decoding`` decode tokens (their memory taken) and prefill chunks."""
        chunks = self._prefill(self.config.max_batch_tokens - decoding)
        cost = self.cost
        batch = decoding + sum(job.computed - past for job, past in chunks)
        elapsed = cost.matmuls(batch) + sum(
            cost.prefill(job.computed - past, past) for job, past in chunks)
        elapsed += self._decode_time()
        self.now += elapsed
        self.busy_seconds += elapsed
        if self.computed_anywhere is not None:  # computed as this step ends, not before
            for job, past in chunks:
                self.computed_anywhere.add(job.keys[past // self.page : job.computed // self.page],
                                           self.now)
        finished = self.batch.advance(1) if decoding else []
        self.prefilling = [job for job in self.prefilling if job.computed < job.prompt_len]
        for job, _ in chunks:
            if job.computed == job.prompt_len:
                self._start_decoding(job, finished)
        self._complete(finished, done)

    def _prefill(self, budget: int) -> list[tuple[Job, int]]:
        """Prefill chunks within ``budget`` tokens, oldest request first; return each job
        with the tokens it had computed before."""
        chunks: list[tuple[Job, int]] = []
        for job in self.prefilling:
            if budget <= 0:
                break
            if job.lease is not None and not job.lease.ready:
                continue  # its load-back has not landed: nothing to compute on yet
            tokens, past = min(job.prompt_len - job.computed, budget), job.computed
            self._unprefilled -= tokens
            budget -= tokens
            chunks.append((job, past))
            job.record.prefilled += tokens
            held = self.ops.prefill(job, past + tokens)
            self._remember(job.keys, past, held, job.computed)
        return chunks

    def _start_decoding(self, job: Job, finished: list[Job]) -> None:
        """The step that ended computed the prompt: the first token is out."""
        if job.record.first_token is None:
            job.record.first_token = self.now
        if job.output_len == 1:
            finished.append(job)
        else:
            self.batch.add(job)

    def _decode_jump(self, horizon: float, done: list[Job]) -> None:
        batch = self.batch
        steps = min(batch.steps_to_next_finish(), self._jump)
        size = len(batch.members)
        per_step = self.cost.matmuls(size) + self._decode_time()
        if self.now < horizon < math.inf:
            steps = min(steps, max(1, int((horizon - self.now) / per_step)))
        count = self._grow(steps, done)
        if count:
            if count != size:  # preemptions left a smaller batch
                per_step = self.cost.matmuls(count) + self._decode_time()
            growth = count * steps * (steps - 1) / 2 * self.cost.full_layers
            elapsed = steps * per_step + growth * self.cost.kv_read
            self.now += elapsed
            self.busy_seconds += elapsed
        self._complete(batch.advance(steps) if count else [], done)

    def _decode_time(self) -> float:
        """Attention/state time of one decode step of the whole batch."""
        batch = self.batch
        windowed = 0
        if self.cost.swa_layers:
            window = self.cost.window
            clock = batch.clock
            windowed = sum(min(j.prompt_len + 1 + clock - j.base, window) for j in batch.members)
        return self.cost.decode(len(batch.members), batch.context_sum(), windowed)

    def _grow(self, steps: int, done: list[Job]) -> int:
        """Give every decoding job memory for ``steps`` more tokens, preempting the newest
        running job while memory is short; return how many decode."""
        batch, hybrid = self.batch, self._hybrid
        for job in list(batch.members) if hybrid else batch.due(steps):
            if job not in batch.members:
                continue  # preempted for an earlier one
            batch.sync(job)
            while not self.ops.grow(job, steps, job.request.output):
                # the newest by submission, not by (re-)admission: an older request is never
                # preempted for a newer one, so the oldest always advances (no livelock)
                victim = max(self.running, key=_submission)
                if victim is not job:
                    self._preempt(victim)
                    continue
                if len(self.running) > 1:
                    self._preempt(job)
                else:
                    self._drop(job)
                    self.ops.abort(job)
                    self._reject(job, done)
                break
            else:
                if not hybrid:
                    batch.schedule_extension(job)
        return len(batch.members)

    def _drop(self, job: Job) -> None:
        """Take ``job`` out of the running set (and the batch or the prefill list)."""
        del self.running[job]
        if job in self.batch.members:
            self.batch.remove(job)
        else:
            self._unprefilled -= job.prompt_len - job.computed
            self.prefilling.remove(job)

    def _preempt(self, job: Job) -> None:
        self._drop(job)
        self.ops.abort(job)
        job.record.preemptions += 1
        job.waiting_since = self.now
        self.preemptions += 1
        self.waiting.appendleft(job)
        self._waiting_tokens += job.prompt_len

    def _complete(self, finished: list[Job], done: list[Job]) -> None:
        """Finish the jobs that sampled their last token."""
        for job in finished:
            del self.running[job]
            held = self.ops.finish(job)
            if held is not None:
                keys = job.sequence_keys
                # the prompt's pages were remembered at prefill, unless MAMBA cut them off
                start = 0 if self._mamba else job.prompt_len - job.prompt_len % self.page
                self._remember(keys, start, held, len(keys) * self.page)
                if self.computed_anywhere is not None:
                    self.computed_anywhere.add(keys[start // self.page :], self.now)
            job.record.finished = self.now
            done.append(job)

    def _remember(self, keys: list[int], start: int, held: int, computed: int) -> None:
        """Pages ``start .. computed`` were computed, ``start .. held`` kept by the cache."""
        page = self.page
        self.held_once.add(keys[start // page : held // page])
        if self.computed_once is not self.held_once:
            self.computed_once.add(keys[start // page : computed // page])

    # ------------------------------------------------------------------ observation

    def _drain_events(self) -> None:
        assert self.resident is not None
        self.resident.feed(self.cache.take_events())

    def _sample(self) -> None:
        self._next_sample = self.now + self.config.sample_every
        stats = self.cache.stats()
        used = [c.pool_capacity - c.pool_available for c in stats.components.values()]
        if stats.host is not None:
            used += [c.pool_capacity - c.pool_available for c in stats.host.components.values()]
        self.samples.append((self.now, stats.held_by_requests, *used))


def _submission(job: Job) -> int:
    return job.submission
