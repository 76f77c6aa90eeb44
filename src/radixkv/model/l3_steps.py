"""What the reference engine (:mod:`radixkv.model.engine`) does only with a storage tier
(L3): it starts the L3 prefetch of the next requests it could admit (``cache.prefetch``,
as a scheduler does when a request arrives), pauses admission after one failed for slots
(each try asks the store again), and, when the pools are short with nothing to preempt,
waits for the prefetches in flight (they pin the prefixes they restore below) and tries
again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cache import PrefixCache
from ..errors import OutOfSlotsError
from .requests import RequestRecord, RequestSpec, resolve_prompt

if TYPE_CHECKING:
    from .engine import EngineStats


class StorageSteps:
    """A base of :class:`~radixkv.model.engine.Engine`: its L3 steps."""

    cache: PrefixCache
    max_running: int
    stats: EngineStats
    _prefetched: set[int]

    def _start(self, spec: RequestSpec, prompt: tuple[int, ...]) -> Any:
        raise NotImplementedError  # the engine's


    def _prefetch(self, pending: list[RequestSpec], done: dict[int, RequestRecord]) -> None:
        """With a storage tier, start the L3 fetch of the next ``max_running`` requests
        that could be admitted, once each (as a scheduler does when a request arrives),
        so that a best-effort admission later finds what arrived meanwhile."""
        if self.cache.storage is None:
            return
        ready = [spec for spec in pending if spec.parent is None or spec.parent in done]
        for spec in ready[: self.max_running]:
            if spec.rid not in self._prefetched:
                self._prefetched.add(spec.rid)
                prompt = resolve_prompt(spec, done)
                self.cache.prefetch(prompt[:-1])  # admission reuses all but the last token

    def _wait_for_storage(self) -> bool:
        """Wait for the L3 prefetches in flight, if any (whether there were). Called only
        when at most one request runs, whose lease is ready: no lease the engine holds
        changes state in the wait."""
        storage = self.cache.storage
        if storage is None or not storage.pending:
            return False
        self.stats.storage_waits += 1
        self.cache.wait()
        return True

    def _start_or_wait(self, spec: RequestSpec, prompt: tuple[int, ...],
                       running: list[Any]) -> Any:
        """Start ``spec``; when nothing runs and the pools are short only because L3
        prefetches in flight pin their prefixes, wait for them and try once more."""
        try:
            return self._start(spec, prompt)
        except OutOfSlotsError:
            if running or not self._wait_for_storage():
                raise
        return self._start(spec, prompt)
