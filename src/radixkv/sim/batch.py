"""DecodeBatch: the decoding requests of one engine, advanced together without touching
each one every step.

Every decoding request feeds exactly one token per step, so a request's fed count is the
batch's step counter ``clock`` less the clock when it started decoding (``job.base``). The
sum of contexts is then one running total plus ``len * clock``; who finishes next and who
needs more memory next sit in two heaps keyed by clock value. A step costs O(log n) for each
request that finishes or extends, and O(1) otherwise. Heap entries of a request that left
the batch are skipped lazily (``job.generation`` changes when it leaves)."""

from __future__ import annotations

import heapq
import itertools

from .jobs import Job


class DecodeBatch:
    def __init__(self) -> None:
        self.clock = 0
        self.members: dict[Job, None] = {}  # insertion order = decode start order
        self._base_sum = 0  # Σ (prompt_len + 1 - base): contexts less len * clock
        self._finish: list[tuple[int, int, int, Job]] = []
        self._extend: list[tuple[int, int, int, Job]] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self.members)

    def add(self, job: Job) -> None:
        """``job`` starts decoding now (its first decode step is the next one)."""
        job.base = self.clock
        job.fed = 0
        self.members[job] = None
        self._base_sum += job.prompt_len + 1 - job.base
        entry = (job.base + job.output_len - 1, next(self._order), job.generation, job)
        heapq.heappush(self._finish, entry)
        self.schedule_extension(job)

    def remove(self, job: Job) -> None:
        self.sync(job)
        del self.members[job]
        self._base_sum -= job.prompt_len + 1 - job.base
        job.generation += 1

    def sync(self, job: Job) -> None:
        """Write the batch's step count into ``job.fed``."""
        job.fed = self.clock - job.base

    def schedule_extension(self, job: Job) -> None:
        """Remember when ``job`` runs out of reserved memory (``extended`` tokens fed)."""
        if job.extended < job.output_len - 1:
            entry = (job.base + job.extended, next(self._order), job.generation, job)
            heapq.heappush(self._extend, entry)

    def context_sum(self) -> int:
        """Σ over members of the tokens the next step's attention reads."""
        return self._base_sum + len(self.members) * self.clock

    def steps_to_next_finish(self) -> int:
        top = _live_top(self._finish)
        return 0 if top is None else top[0] - self.clock

    def due(self, steps: int) -> list[Job]:
        """Pop the members whose reserved memory ends within the next ``steps`` steps."""
        due: list[Job] = []
        limit = self.clock + steps
        heap = self._extend
        # bench sim: the lazy deletion inline, no call per look at the top
        while heap:
            clock, _, generation, job = heap[0]
            if generation == job.generation:
                if clock >= limit:
                    break
                due.append(job)
            heapq.heappop(heap)
        return due

    def advance(self, steps: int) -> list[Job]:
        """Run ``steps`` steps; pop and return the members that have fed their last token
        (their ``fed`` synced; they are out of the batch)."""
        self.clock = now = self.clock + steps
        finished: list[Job] = []
        heap = self._finish
        while heap:
            clock, _, generation, job = heap[0]
            if generation == job.generation:
                if clock > now:
                    break
                self.remove(job)
                finished.append(job)
            heapq.heappop(heap)
        return finished


def _live_top(heap: list[tuple[int, int, int, Job]]) -> tuple[int, int, int, Job] | None:
    """The first entry of ``heap`` whose job is still in the batch (stale ones popped)."""
    while heap and heap[0][2] != heap[0][3].generation:
        heapq.heappop(heap)
    return heap[0] if heap else None
