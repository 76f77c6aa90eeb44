"""A seeded random walk of puts, removes, exists and gets on each real backend, checked
step by step against a dict of what was stored."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from radixkv.storage import MooncakeStorage, StorageBackend

from .support import PAGE, ROW, empty, keys, rows

SLOTS = 6
CONTENT = [np.random.default_rng(page).standard_normal((PAGE, *ROW)).astype(np.float16)
           for page in range(SLOTS)]
indices = st.lists(st.integers(0, SLOTS - 1), min_size=1, max_size=SLOTS)


def run_walk(storage: StorageBackend) -> None:
    class Walk(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.storage = storage
            self.names = keys(SLOTS)  # fresh keys per example: nothing left from the last
            self.model: dict[int, np.ndarray] = {}
            # one backend serves every example: count from what it had counted before
            self.misses = self.first_misses = storage.stats().faults["missing"]
            self.faults = storage.stats().total_faults

        @rule(pages=indices)
        def put(self, pages: list[int]) -> None:
            # a key names its bytes (its prefix's KV): a page's content is fixed by its key
            source = np.concatenate([CONTENT[p] for p in pages])
            flags = self.storage.put_from([self.names[p] for p in pages],
                                          rows(source, range(len(pages))))
            assert flags == [True] * len(pages)
            self.model.update((page, CONTENT[page]) for page in pages)

        @rule(pages=indices)
        def remove(self, pages: list[int]) -> None:
            if isinstance(self.storage, MooncakeStorage):
                return  # leases from recent reads block removal: covered elsewhere
            self.storage.remove([self.names[p] for p in pages])
            for page in pages:
                self.model.pop(page, None)

        @rule(pages=indices)
        def exists_prefix(self, pages: list[int]) -> None:
            expected = next((i for i, p in enumerate(pages) if p not in self.model), len(pages))
            assert self.storage.exists_prefix([self.names[p] for p in pages]) == expected

        @rule(pages=indices)
        def get_into(self, pages: list[int]) -> None:
            target = empty(len(pages))
            flags = self.storage.get_into([self.names[p] for p in pages],
                                          rows(target, range(len(pages))))
            assert flags == [p in self.model for p in pages]
            for position, page in enumerate(pages):
                window = target[position * PAGE : (position + 1) * PAGE]
                if page in self.model:
                    np.testing.assert_array_equal(window, self.model[page])
                else:
                    assert not window.any()
                    self.misses += 1

        @invariant()
        def only_misses_are_counted(self) -> None:
            stats = self.storage.stats()
            assert stats.faults["missing"] == self.misses
            assert stats.total_faults - self.faults == self.misses - self.first_misses


    run_state_machine_as_test(Walk, settings=settings(
        max_examples=15, stateful_step_count=12, deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture]))


def test_a_random_walk_matches_a_dict_of_stored_pages(backend: StorageBackend) -> None:
    run_walk(backend)
