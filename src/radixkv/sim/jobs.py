"""A request inside one simulated engine and the cache calls it makes.

Every call goes through :class:`~radixkv.PrefixCache`'s public API, the way a serving engine
would make it: ``admit(prompt, max_match=len - 1)`` (the last prompt token is always computed:
its logits are needed), ``checkpoint`` where MAMBA states are saved, ``commit`` after each
prefill chunk, ``slide_window`` and ``extend`` while decoding, ``finish`` at the end (or
``abort`` for preemption, and for answers that are not cached).
"""

from __future__ import annotations

from .. import CacheConfig, Lease, PrefixCache
from ..errors import OutOfSlotsError
from .records import RequestRecord
from .requests import SimRequest


def component_names(config: CacheConfig) -> tuple[str, ...]:
    """The names of a cache's components, in tree order (entries may be names or specs)."""
    return tuple(c if isinstance(c, str) else str(c.name) for c in config.components)


class Job:
    """``computed``: prompt tokens whose KV exists; ``fed``: answer tokens fed back (the
    first answer token comes out of the prefill; ``output_len - 1`` are fed, the last is
    never; ``extended`` of them have memory, see :meth:`JobOps.grow`). ``sequence_keys``:
    the page keys, in its namespace, of all it may cache (the prompt and the fed answer);
    ``keys``: those of the prompt. ``seen`` and ``seen_any``: what earlier requests had of
    this prompt (this namespace / any), set on arrival. ``base`` and ``generation``: see
    :class:`~radixkv.sim.batch.DecodeBatch`. ``host_hit``: prompt tokens its last
    admission loads back from the host tier. ``submission``: how many requests its engine
    took before it (preemption picks the newest). ``waiting_since``: when it last joined
    its engine's queue."""

    __slots__ = ("base", "computed", "extended", "fed", "generation", "hints", "host_hit", "keys",
                 "lease", "output_len", "prompt_len", "record", "request", "salt", "seen",
                 "seen_any", "sequence_keys", "submission", "waiting_since")

    def __init__(self, request: SimRequest, record: RequestRecord, sequence_keys: list[int],
                 page: int, salt: int) -> None:
        self.request, self.record, self.salt = request, record, salt
        self.sequence_keys = sequence_keys
        self.keys = sequence_keys[: len(request.prompt) // page]
        self.lease: Lease | None = None
        self.computed = self.fed = self.extended = self.seen = self.seen_any = 0
        self.host_hit = 0
        self.base = self.generation = 0
        self.submission = 0
        self.waiting_since = 0.0
        self.hints: tuple[int, ...] = ()
        self.prompt_len, self.output_len = len(request.prompt), len(request.output)

    @property
    def prefilling(self) -> bool:
        return self.computed < self.prompt_len

    @property
    def remaining_decode(self) -> int:
        """Decode steps left (each feeds one answer token and samples the next)."""
        return self.output_len - 1 - self.fed

    @property
    def context(self) -> int:
        """Tokens whose KV the next decode step reads (the fed token included)."""
        return self.prompt_len + self.fed + 1


class JobOps:
    """The cache calls of jobs on one cache. ``hints``: save MAMBA states where the cache
    hints (branch points, the prompt's end); otherwise only every track interval."""

    def __init__(self, cache: PrefixCache, hints: bool, reserve: int) -> None:
        self.cache = cache
        self.page = cache.config.page_size
        components = component_names(cache.config)
        self.swa, self.mamba = "swa" in components, "mamba" in components
        self.interval = cache.config.mamba_track_interval or 0
        self.use_hints, self.reserve = hints, reserve
        self.skipped_checkpoints = 0

    def admit(self, job: Job) -> Lease:
        """Raises :class:`OutOfSlotsError` with nothing changed when it cannot fit. With a
        host tier, loads back what the host holds beyond the device prefix."""
        prompt, host = job.request.prompt, self.cache.host
        before = 0 if host is None else host.counters.host_hit_tokens
        lease = self.cache.admit(prompt, job.request.namespace, max_match=len(prompt) - 1,
                                 load_back=host is not None)
        job.host_hit = 0 if host is None else host.counters.host_hit_tokens - before
        job.lease, job.computed, job.fed, job.extended = lease, lease.cached_length, 0, 0
        if self.mamba:
            job.hints = lease.checkpoint_hints if self.use_hints else self._intervals(
                lease.cached_length, len(prompt))
        return lease

    def _intervals(self, start: int, end: int) -> tuple[int, ...]:
        first = start - start % self.interval + self.interval
        return tuple(range(first, end + 1, self.interval))

    def prefill(self, job: Job, tokens: int) -> int:
        """Compute the next ``tokens`` prompt tokens: save hinted states, commit; return
        how many of the job's tokens the tree holds."""
        lease = job.lease
        assert lease is not None
        end = job.computed + tokens
        if self.mamba:
            for position in job.hints:
                if job.computed < position <= end and position > lease.tree_owned:
                    self._checkpoint(lease, position)
        job.computed = end
        return self.cache.commit(lease, end)

    def grow(self, job: Job, steps: int) -> bool:
        """Make room for the answer tokens the next ``steps`` decode steps feed; False
        (nothing changed) when the cache has none. Memory is taken ``reserve`` tokens ahead
        (``extend`` once per stretch, not per step); tokens appended ahead are not computed
        yet, so ``slide_window`` and checkpoints go by what is fed."""
        lease = job.lease
        assert lease is not None
        start = len(job.request.prompt) + job.fed
        if job.fed + steps > job.extended:
            size = min(max(steps, self.reserve), len(job.request.output) - 1 - job.extended)
            try:
                if self.swa:
                    self.cache.slide_window(lease, start)
                self.cache.extend(lease, job.request.output[job.extended : job.extended + size])
            except OutOfSlotsError:
                return False
            job.extended += size
        if self.mamba and job.request.cache_output:
            last = (start + steps) - (start + steps) % self.interval
            if last > start and last > lease.tree_owned and self._checkpoint(lease, last):
                self.cache.commit(lease, last)
        return True

    def _checkpoint(self, lease: Lease, position: int) -> bool:
        try:
            self.cache.checkpoint(lease, position)
        except OutOfSlotsError:  # no state slot free: this position just is not saved
            self.skipped_checkpoints += 1
            return False
        return True

    def finish(self, job: Job) -> tuple[list[int], int] | None:
        """Finish the job; return the page keys of its whole sequence and how many of its
        tokens the tree holds (``None`` when the answer is not cached)."""
        lease, request = job.lease, job.request
        assert lease is not None
        job.lease = None
        if not request.cache_output:
            self.cache.abort(lease)  # the prompt is committed already; the answer is not kept
            return None
        return job.sequence_keys, self.cache.finish(lease)

    def abort(self, job: Job) -> None:
        if job.lease is not None:
            self.cache.abort(job.lease)
            job.lease = None
        job.computed = job.fed = job.extended = 0
