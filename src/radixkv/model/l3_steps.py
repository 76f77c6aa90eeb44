"""What the reference engine (:mod:`radixkv.model.engine`) does only with a storage tier
(L3): it starts the L3 prefetch of the next requests it could admit (``cache.prefetch``,
as a scheduler does when a request arrives), pauses admission after one failed for slots
(each try asks the store again), and, when the pools are short with nothing to preempt,
waits for the prefetches in flight (they pin the prefixes they restore below) and tries
again."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..cache import PrefixCache
from ..errors import OutOfSlotsError
from .requests import RequestRecord, RequestSpec, resolve_prompt

if TYPE_CHECKING:
    from .engine import EngineStats

_Run = TypeVar("_Run")


class StorageSteps:
    """A part of :class:`~radixkv.model.engine.Engine`: its L3 steps over ``cache``,
    counting in the engine's ``stats``; it owns the set of requests prefetched in a run."""

    def __init__(self, cache: PrefixCache, max_running: int, stats: EngineStats) -> None:
        self.cache, self.max_running, self.stats = cache, max_running, stats
        self.prefetched: set[int] = set()
        """Ids of the requests whose L3 fetch started in this run."""

    def prefetch(self, pending: list[RequestSpec], done: dict[int, RequestRecord]) -> None:
        """With a storage tier, start the L3 fetch of the next ``max_running`` requests
        that could be admitted, once each (as a scheduler does when a request arrives),
        so that a best-effort admission later finds what arrived meanwhile."""
        if self.cache.storage is None:
            return
        ready = [spec for spec in pending if spec.parent is None or spec.parent in done]
        for spec in ready[: self.max_running]:
            if spec.rid not in self.prefetched:
                self.prefetched.add(spec.rid)
                prompt = resolve_prompt(spec, done)
                self.cache.prefetch(prompt[:-1])  # admission reuses all but the last token

    def wait_for_storage(self) -> bool:
        """Wait for the L3 prefetches in flight, if any (whether there were). Called only
        when at most one request runs, whose lease is ready: no lease the engine holds
        changes state in the wait."""
        storage = self.cache.storage
        if storage is None or not storage.pending:
            return False
        self.stats.storage_waits += 1
        self.cache.wait()
        return True

    def start_or_wait(self, start: Callable[[], _Run], running: list[_Run]) -> _Run:
        """``start()`` a request; when nothing runs and the pools are short only because L3
        prefetches in flight pin their prefixes, wait for them and try once more."""
        try:
            return start()
        except OutOfSlotsError:
            if running or not self.wait_for_storage():
                raise
        return start()
