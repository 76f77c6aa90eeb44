"""The request life-cycle as a serving engine drives it through a :class:`~radixkv.PrefixCache`:
one set of steps for every engine radixkv runs (the reference model's, the simulator's), for
any component combination alike.

A request is admitted reusing at most all of its prompt but the last token (the engine needs
that token's logits: ``admit(prompt, max_match=len(prompt) - 1)``), loading back what a host
tier holds beyond the device prefix (``load_back=True``). Its prompt is prefilled in chunks:
the states planned inside a chunk are saved (``checkpoint``) and the chunk is committed
(``commit``). It then decodes: each stretch of decode steps first gets memory for the answer
tokens it feeds (``slide_window`` over what is computed, then ``extend``, ``ahead`` tokens
ahead), and the state at the last track interval the stretch passes is saved and committed.
It ends with ``finish``, or ``abort`` when it is preempted or its answer is not to be cached
(its prompt is committed already).

Where states are saved, with a MAMBA component: while prefilling, where the cache hints
(:attr:`~radixkv.Lease.checkpoint_hints`: branch points, the prompt's end, every track
interval), or with ``hints=False`` every track interval of the prompt only; while decoding,
every track interval. An engine that keeps state contents (``states``) starts a request from
a copy of the cached state and copies its working state into every slot it saves.

The scheduling around these steps (who runs, chunk sizes, preemption, polling) is the
engine's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..cache import Lease, PrefixCache
from ..components import Mamba
from ..errors import OutOfSlotsError


class StateMemory(Protocol):
    """Where an engine keeps its recurrent states, by state slot."""

    def copy_state(self, source: int, target: int) -> None: ...
    def zero_state(self, slot: int) -> None: ...


class RequestState:
    """Where one request is in its life on a cache; an engine keeps one per request (a
    subclass adds the engine's own slots).

    Given: ``prompt_len``; ``feeds``, the answer tokens it feeds back (all it samples but the
    last, which is never computed); ``caches_answer``, whether its answer is cached at the
    end. Set at admission: ``lease``; ``computed``, prompt tokens whose KV exists;
    ``extended``, answer tokens with memory (fed or ahead); ``fed``, answer tokens fed (the
    engine advances it after each decode step); ``saves``, the prompt positions where its
    state is saved; ``host_hit``, prompt tokens the admission loads back from the host tier.
    """

    __slots__ = ("caches_answer", "computed", "extended", "fed", "feeds", "host_hit", "lease",
                 "prompt_len", "saves")

    def __init__(self, prompt_len: int, feeds: int, caches_answer: bool = True) -> None:
        self.prompt_len, self.feeds, self.caches_answer = prompt_len, feeds, caches_answer
        self.lease: Lease | None = None
        self.computed = self.extended = self.fed = self.host_hit = 0
        self.saves: tuple[int, ...] = ()


Compute = Callable[[Any, int], None]
"""``compute(request, stop)``: the engine computes the prompt from ``request.computed`` up to
``stop`` (the steps then set ``request.computed``)."""


class RequestSteps:
    """The cache calls of a request's life on one cache (see the module docstring).

    ``hints``: save states where the cache hints (else every track interval only);
    ``ahead``: decode memory is taken this many tokens ahead of what is fed; ``states``:
    the engine's state contents (``None``: it keeps none, as a simulator); ``skip_unsaved``:
    a state that finds no free slot is not saved and counted in ``skipped_checkpoints``
    (else the :class:`OutOfSlotsError` is raised, the request is then preempted).
    """

    def __init__(self, cache: PrefixCache, *, hints: bool = True, ahead: int = 1,
                 states: StateMemory | None = None, skip_unsaved: bool = True) -> None:
        specs = cache.config.specs
        self.cache = cache
        self.windowed = any(spec.windowed for spec in specs)
        mamba = next((spec for spec in specs if isinstance(spec, Mamba)), None)
        self.interval = None if mamba is None else mamba.track_interval
        """The MAMBA track interval; ``None``: no state is saved."""
        self.use_hints, self.ahead = hints, ahead
        self.states, self.skip_unsaved = states, skip_unsaved
        self.skipped_checkpoints = 0

    def admit(self, request: RequestState, prompt: Any, namespace: Any = None) -> Lease:
        """Admit ``request`` with ``prompt`` and reset its progress. Raises
        :class:`OutOfSlotsError`, nothing changed, when it cannot fit (the cache evicts
        what it can first)."""
        host = self.cache.host
        before = 0 if host is None else host.counters.host_hit_tokens
        lease = self.cache.admit(prompt, namespace, max_match=len(prompt) - 1,
                                 load_back=host is not None)
        request.host_hit = 0 if host is None else host.counters.host_hit_tokens - before
        request.lease, request.computed, request.fed, request.extended = (
            lease, lease.cached_length, 0, 0)
        if self.interval is not None:
            request.saves = lease.checkpoint_hints if self.use_hints else self._intervals(
                lease.cached_length, len(prompt), self.interval)
        return lease

    @staticmethod
    def _intervals(start: int, end: int, interval: int) -> tuple[int, ...]:
        first = start - start % interval + interval
        return tuple(range(first, end + 1, interval))

    def start(self, request: RequestState) -> None:
        """The request's lease is ready: its working state starts as a copy of the cached
        one, or zeros (copy-on-write; with ``states`` only)."""
        lease = request.lease
        assert lease is not None
        if self.states is None or lease.state_slot is None:
            return
        if lease.copy_state_from is None:
            self.states.zero_state(lease.state_slot)
        else:
            self.states.copy_state(lease.copy_state_from, lease.state_slot)

    def prefill(self, request: RequestState, end: int, compute: Compute | None = None) -> int:
        """Prefill the prompt up to ``end``: save the states planned on the way, commit;
        return how many of its tokens the tree holds. ``compute`` is called before each
        state saved and for the rest (``None``: the engine computes nothing here)."""
        lease = request.lease
        assert lease is not None
        if self.interval is not None:
            for position in request.saves:
                if request.computed < position <= end and position > lease.tree_owned:
                    if compute is not None:
                        compute(request, position)
                    request.computed = position
                    self._save(lease, position)
        if compute is not None:
            compute(request, end)
        request.computed = end
        return self.cache.commit(lease, end)

    def grow(self, request: RequestState, steps: int, answer: Any) -> bool:
        """:meth:`reserve` where the request's memory does not reach, then :meth:`decoded` (for
        an engine that computes nothing in between); False when the cache has no room."""
        if request.fed + steps > request.extended:
            try:
                self.reserve(request, steps, answer)
            except OutOfSlotsError:
                return False
        interval = self.interval
        if interval is not None and request.caches_answer:
            start = request.prompt_len + request.fed
            if (start + steps) % interval < steps:  # bench sim: a call only where one passes
                self.decoded(request, start, steps)
        return True

    def reserve(self, request: RequestState, steps: int, answer: Any) -> None:
        """Give the request memory for its next ``steps`` decode steps (where what it has
        does not reach: ``fed + steps > extended``): ``max(steps, ahead)`` answer tokens
        more, never past what it feeds, from ``answer`` (its tokens by position). The
        windows slide first, by what is fed: tokens appended ahead are not computed yet.
        Raises :class:`OutOfSlotsError` when the cache has no room (the windows may have
        slid)."""
        lease, extended = request.lease, request.extended
        assert lease is not None
        size = min(max(steps, self.ahead), request.feeds - extended)
        if self.windowed:
            self.cache.slide_window(lease, request.prompt_len + request.fed)
        self.cache.extend(lease, answer[extended : extended + size])
        request.extended = extended + size

    def decoded(self, request: RequestState, start: int, steps: int) -> None:
        """The ``steps`` decode steps from position ``start`` are computed: save the state
        at the last track interval they pass, and commit it (answers that are cached only)."""
        lease, interval = request.lease, self.interval
        assert lease is not None
        if interval is None or not request.caches_answer:
            return
        last = (start + steps) - (start + steps) % interval
        if last > start and last > lease.tree_owned and self._save(lease, last):
            self.cache.commit(lease, last)

    def _save(self, lease: Lease, position: int) -> bool:
        """Save the state after ``position`` tokens; whether it was (see ``skip_unsaved``)."""
        try:
            slot = self.cache.checkpoint(lease, position)
        except OutOfSlotsError:  # no state slot free: this position just is not saved
            if not self.skip_unsaved:
                raise
            self.skipped_checkpoints += 1
            return False
        if self.states is not None:
            working = lease.state_slot
            assert working is not None
            self.states.copy_state(working, slot)
        return True

    def finish(self, request: RequestState) -> int | None:
        """End the request: how many of its tokens the tree holds, or ``None`` when its
        answer is not cached (it is aborted: the prompt is committed already)."""
        lease = request.lease
        assert lease is not None
        request.lease = None
        if not request.caches_answer:
            self.cache.abort(lease)
            return None
        return self.cache.finish(lease)

    def abort(self, request: RequestState) -> None:
        """Drop the request's lease (a preemption): it starts over at its next admission."""
        if request.lease is not None:
            self.cache.abort(request.lease)
            request.lease = None
        request.computed = request.fed = request.extended = 0
