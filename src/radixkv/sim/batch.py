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
        top = self._top(self._finish)
        return 0 if top is None else top[0] - self.clock

    def due(self, steps: int) -> list[Job]:
        """Pop the members whose reserved memory ends within the next ``steps`` steps."""
        due = []
        limit = self.clock + steps
        while (top := self._top(self._extend)) is not None and top[0] < limit:
            heapq.heappop(self._extend)
            due.append(top[3])
        return due

    def advance(self, steps: int) -> list[Job]:
        """Run ``steps`` steps; pop and return the members that have fed their last token
        (their ``fed`` synced; they are out of the batch)."""
        self.clock += steps
        finished = []
        while (top := self._top(self._finish)) is not None and top[0] <= self.clock:
            heapq.heappop(self._finish)
            job = top[3]
            self.remove(job)
            finished.append(job)
        return finished

    def _top(self, heap: list[tuple[int, int, int, Job]]) -> tuple[int, int, int, Job] | None:
        while heap and heap[0][2] != heap[0][3].generation:
            heapq.heappop(heap)
        return heap[0] if heap else None
