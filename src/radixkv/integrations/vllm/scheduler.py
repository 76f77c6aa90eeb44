"""The connector's scheduler side: radixkv decides what a request reuses, and each step's
plan says which rows the worker loads and saves.

A vLLM request holds one radixkv :class:`~radixkv.Lease` while it runs; the lease's tokens
are the ones whose KV vLLM has computed (or loaded), and its slots are rows of the worker's
row buffer. vLLM's calls map so:

- ``get_num_new_matched_tokens`` -> :meth:`SchedulerSide.matched`: ``cache.match`` of all
  but the last token (vLLM must compute at least one); changes nothing but recency. A request
  that shares more pages with a request admitted in the same step than radixkv holds waits
  one step (``None``: vLLM asks again next step), then loads those pages instead of computing
  them a second time: vLLM's own prefix cache shares blocks within a step, but a connector's
  rows exist only once the step that computes them has run.
- ``update_state_after_alloc`` -> :meth:`SchedulerSide.allocated`: with tokens to load, the
  lease is admitted on exactly the matched prefix (locked until the request ends) and its
  rows are planned into vLLM's new blocks.
- ``build_connector_meta`` -> :meth:`SchedulerSide.step`: every scheduled request's lease is
  extended by the tokens this step computes (prefill chunks and decode tokens alike) and
  committed, so its whole pages are in the tree, matchable by any request scheduled from the
  next step on: the worker writes their rows in this step, before any later step reads them.
- ``request_finished`` and preemption -> :meth:`SchedulerSide.finished`: ``cache.finish``.

Why a step never reads a row it writes: loaded rows were in the tree before the step and are
locked; saved rows are the lease's fresh ones, and where a commit found a page the tree
already held (another request inserted it), that page's rows are not written again.

When radixkv has no room (every row locked by running requests), a request's tokens are
simply not saved in that step; vLLM still holds their KV in its blocks, so a later step saves
them. Nothing here imports vLLM: a request is read through :class:`RequestView`.

With a host tier (and L3) below the rows (:mod:`.lower_tiers`), every call first applies what
happened since the last one (the step planned last has run: its rows may be backed up; the
copy engine's completions are polled), and :meth:`SchedulerSide.matched` first brings what
the host tier and L3 hold of the prompt into rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from radixkv import Lease, PrefixCache
from radixkv.errors import EngineError, OutOfSlotsError
from radixkv.integrations.restore import Restorer
from radixkv.integrations.vllm.host_copies import RowCopyEngine
from radixkv.integrations.vllm.keys import Namespace, cacheable, namespace_of
from radixkv.integrations.vllm.plan import StepPlan, Transfer, vllm_slots

__all__ = ["RequestView", "SchedulerSide"]


class RequestView(Protocol):
    """What the scheduler side reads of a vLLM ``Request``."""

    request_id: str
    all_token_ids: Sequence[int]
    num_computed_tokens: int


@dataclass
class _Tracked:
    request: Any  # the live vLLM request: its token ids and computed count move on
    namespace: Namespace | None
    lease: Lease | None = None
    saved: int = 0  # == lease.num_tokens: positions below it are the tree's or written
    load: Transfer | None = None  # this step's load, planned at allocation


class SchedulerSide:
    """Leases of running requests over ``cache`` (whose slots are row-buffer rows) and the
    plan of each step. Single-threaded: vLLM's scheduler makes every call."""

    def __init__(self, cache: PrefixCache, block_size: int, *,
                 negative_control: bool = False, copies: RowCopyEngine | None = None,
                 restorer: Restorer | None = None) -> None:
        """``copies`` and ``restorer``: the host tier's copy engine and what restores host
        and L3 prefixes into rows, for a cache with tiers below the rows."""
        self.cache = cache
        self.block_size = block_size
        self.negative_control = negative_control
        self._copies = copies
        self.restorer = restorer
        self._requests: dict[str, _Tracked] = {}
        self._asked: dict[str, int] = {}  # request id -> vLLM's own computed tokens
        self._admitted: list[tuple[Namespace | None, Any]] = []  # this step's, with tokens
        self.counters = {"loaded_tokens": 0, "saved_tokens": 0, "unsaved_tokens": 0,
                         "preempted": 0, "steps": 0, "deferred": 0}
        """``loaded_tokens``: reused (planned loads); ``saved_tokens``: rows planned to be
        written; ``unsaved_tokens``: tokens a step could not save for want of rows;
        ``preempted``: preemptions vLLM reported; ``steps``: plans built; ``deferred``:
        requests told to wait a step for pages a request admitted in that step computes."""

    def matched(self, request: Any, computed: int) -> int | None:
        """Tokens beyond ``computed`` (what vLLM's own prefix cache holds) that radixkv holds
        of ``request``'s tokens, leaving at least the last one to compute; ``None`` when a
        request admitted in this step will compute more of them (ask again next step).
        Refreshes recency and remembers ``computed`` for :meth:`allocated`."""
        self.poll()
        if not cacheable(request):
            return 0
        self._asked[request.request_id] = computed
        tokens = request.all_token_ids
        if len(tokens) <= self.cache.page_size:
            return 0
        wanted = np.asarray(tokens[: len(tokens) - 1], dtype=np.int64)
        namespace = namespace_of(request)
        if self.restorer is not None:
            self.restorer.restore(wanted, namespace, request.request_id)
        held = self.cache.match(wanted, namespace).length
        ahead = self._shared_with_admitted(wanted, namespace)
        if ahead >= max(held, computed) + self.cache.page_size:
            self.counters["deferred"] += 1
            return None
        return max(0, held - computed)

    def _shared_with_admitted(self, tokens: Any, namespace: Namespace | None) -> int:
        """The longest prefix of ``tokens`` a request admitted in this step shares."""
        shared = 0
        for space, other in self._admitted:
            if space == namespace:
                length = min(len(tokens), len(other))
                differ = np.flatnonzero(tokens[:length] != other[:length])
                shared = max(shared, int(differ[0]) if len(differ) else length)
        return shared

    def allocated(self, request: Any, external: int, block_ids: Sequence[int]) -> None:
        """vLLM allocated ``request``'s blocks (``block_ids``); ``external`` tokens after
        those its own cache holds are to be loaded. Ends a lease the request still held (it
        was preempted). Raises ``RuntimeError`` when radixkv no longer holds what
        :meth:`matched` promised, which vLLM's call order rules out."""
        self.poll()
        computed = self._asked.get(request.request_id, 0)
        self._finish(request.request_id)
        if not cacheable(request):
            return
        tracked = _Tracked(request, namespace_of(request))
        self._requests[request.request_id] = tracked
        self._admitted.append((tracked.namespace,
                               np.asarray(request.all_token_ids, dtype=np.int64)))
        if external > 0:
            self._plan_load(tracked, computed, computed + external, block_ids)

    def _plan_load(self, tracked: _Tracked, start: int, end: int,
                   block_ids: Sequence[int]) -> None:
        tokens = np.asarray(tracked.request.all_token_ids[:end], dtype=np.int64)
        lease = self.cache.admit(tokens, tracked.namespace)
        if lease.cached_length < end:
            self.cache.abort(lease)
            raise RuntimeError(f"radixkv: {end} tokens were matched for request "
                               f"{tracked.request.request_id}, {lease.cached_length} remain")
        rows = lease.slots[start:end].copy()
        if self.negative_control:  # tests only: every position reads the first row
            rows[:] = rows[0]
        positions = np.arange(start, end, dtype=np.int64)
        tracked.lease, tracked.saved = lease, end
        tracked.load = Transfer(rows, vllm_slots(block_ids, self.block_size, positions))
        self.counters["loaded_tokens"] += end - start

    def step(self, scheduled: Mapping[str, int], block_ids_of: Callable[[str], Sequence[int]],
             preempted: Iterable[str] = ()) -> StepPlan:
        """The plan of one step: ``scheduled`` maps request ids to the tokens the step
        computes (from each request's ``num_computed_tokens``, not yet advanced),
        ``block_ids_of`` gives a scheduled request's block table, ``preempted`` lists
        requests vLLM preempted since the last step (their leases end)."""
        self.poll()
        self.counters["steps"] += 1
        self._admitted.clear()
        for request_id in preempted:
            self.counters["preempted"] += 1
            if request_id not in scheduled:
                self._finish(request_id)
        loads, saves = [], []
        for request_id, count in scheduled.items():
            tracked = self._requests.get(request_id)
            if tracked is None:
                continue
            if tracked.load is not None:
                loads.append(tracked.load)
                tracked.load = None
            saves.append(self._plan_save(tracked, count, block_ids_of(request_id)))
        return StepPlan(Transfer.join(loads), Transfer.join(saves))

    def _plan_save(self, tracked: _Tracked, count: int, block_ids: Sequence[int]) -> Transfer:
        request = tracked.request
        end = int(request.num_computed_tokens) + count
        if len(request.all_token_ids) < end:
            return Transfer()  # ids not known yet (speculative tokens): nothing to cache
        if not self._extend(tracked, end):
            self.counters["unsaved_tokens"] += end - tracked.saved
            return Transfer()
        lease = tracked.lease
        assert lease is not None
        before = lease.slots[tracked.saved:end].copy()
        if self._copies is not None:  # a backup of these rows waits until the step ran
            self._copies.unwritten(before)
        self.cache.commit(lease, end)
        after = lease.slots[tracked.saved:end]
        fresh = before == after  # else the tree held that page already: someone wrote it
        positions = np.arange(tracked.saved, end, dtype=np.int64)[fresh]
        tracked.saved = end
        self.counters["saved_tokens"] += len(positions)
        return Transfer(after[fresh].copy(), vllm_slots(block_ids, self.block_size, positions))

    def _extend(self, tracked: _Tracked, end: int) -> bool:
        """Grow the request's lease to its first ``end`` tokens (admitting it on the
        request's first save); ``False`` when radixkv has no rows for them now."""
        try:
            if tracked.lease is None:
                tokens = np.asarray(tracked.request.all_token_ids[:end], dtype=np.int64)
                tracked.lease = self.cache.admit(tokens, tracked.namespace)
                tracked.saved = tracked.lease.cached_length
            elif tracked.lease.num_tokens < end:
                lease = tracked.lease
                self.cache.extend(lease, np.asarray(
                    tracked.request.all_token_ids[lease.num_tokens:end], dtype=np.int64))
        except (OutOfSlotsError, EngineError):  # no room, or a backup it waited for held
            return False
        return True

    def finished(self, request_id: str) -> None:
        """The request ended (finished, aborted or preempted): its computed whole pages stay
        cached and its lock goes. Unknown ids are ignored."""
        self.poll()
        self._finish(request_id)

    def _finish(self, request_id: str) -> None:
        self._asked.pop(request_id, None)
        tracked = self._requests.pop(request_id, None)
        if tracked is not None and tracked.lease is not None:
            self.cache.finish(tracked.lease)

    def poll(self) -> None:
        """With tiers: the step planned last has run (its rows may be backed up) and the
        copy engine's completions are applied. Call only between steps (vLLM's scheduler
        calls the connector only then)."""
        if self._copies is not None:
            self._copies.step_ran()
            self.cache.poll()
            if self.restorer is not None:
                self.restorer.settle()

    def close(self) -> None:
        """Settle L3's writes and close its store (``cache.close()``)."""
        self.poll()
        self.cache.close()

    def reset(self) -> bool:
        """Drop everything cached, if no request holds a lease; whether it did."""
        if self._requests:
            return False
        self.cache.reset()
        return True

    @property
    def num_requests(self) -> int:
        """Requests tracked (allocated, not yet finished)."""
        return len(self._requests)
