"""RequestSteps: the request life-cycle an engine drives, each step audited."""

from __future__ import annotations

from typing import Any

import pytest

from radixkv.driver import RequestState, RequestSteps
from radixkv.errors import OutOfSlotsError

from ..audited import AuditedCache, assert_refused

PAGE = 4


def mamba_cache(states: int = 64, interval: int = 8, capacity: int = 256) -> AuditedCache:
    return AuditedCache(capacity=capacity, page_size=PAGE, components=("full", "mamba"),
                        mamba_track_interval=interval, mamba_states=states)


def steps_of(cache: AuditedCache, **options: Any) -> RequestSteps:
    return RequestSteps(cache, **options)  # type: ignore[arg-type]  # audited PrefixCache


def serve(steps: RequestSteps, prompt: list[int], answer: list[int]) -> RequestState:
    """A whole request, one prefill chunk and one-token decode stretches."""
    request = RequestState(len(prompt), len(answer) - 1)
    steps.admit(request, prompt)
    steps.prefill(request, len(prompt))
    while request.fed < request.feeds:
        assert steps.grow(request, 1, answer)
        request.fed += 1
    steps.finish(request)
    return request


class Computed:
    """A compute hook that records the stops it was asked to compute up to."""

    def __init__(self) -> None:
        self.stops: list[tuple[int, int]] = []

    def __call__(self, request: RequestState, stop: int) -> None:
        self.stops.append((request.computed, stop))


class States:
    """A StateMemory that records what it was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []

    def copy_state(self, source: int, target: int) -> None:
        self.calls.append(("copy", source, target))

    def zero_state(self, slot: int) -> None:
        self.calls.append(("zero", slot, None))


def test_admission_reuses_all_of_a_cached_prompt_but_its_last_token() -> None:
    cache = AuditedCache(capacity=256, page_size=PAGE)
    steps = steps_of(cache)
    prompt = list(range(16))
    serve(steps, prompt, [100, 101])
    again = RequestState(len(prompt), 1)
    lease = steps.admit(again, prompt)
    assert lease.cached_length == 12  # the whole prompt is cached; the last page is computed
    assert (again.lease, again.computed, again.fed, again.extended) == (lease, 12, 0, 0)
    assert again.saves == ()  # no state component
    steps.abort(again)


def test_prefill_computes_up_to_each_hinted_state_saves_it_and_commits_the_chunk() -> None:
    cache = mamba_cache(interval=8)
    steps, compute = steps_of(cache), Computed()
    prompt = list(range(22))
    request = RequestState(len(prompt), 1)
    lease = steps.admit(request, prompt)
    assert request.saves == (8, 16, 20)  # every interval, and the prompt's last page end
    held = steps.prefill(request, 18, compute)
    assert compute.stops == [(0, 8), (8, 16), (16, 18)] and request.computed == 18
    assert held == lease.tree_owned == 16  # the tree caches up to the last state
    assert [cache.match(prompt[:n]).length for n in (12, 18)] == [8, 16]
    steps.prefill(request, 22, compute)
    assert compute.stops[-2:] == [(18, 20), (20, 22)] and lease.tree_owned == 20
    steps.finish(request)


def test_without_hints_states_are_saved_at_track_intervals_only() -> None:
    cache = mamba_cache(interval=8)
    steps = steps_of(cache, hints=False)
    request = RequestState(22, 1)
    steps.admit(request, list(range(22)))
    assert request.saves == (8, 16)
    assert steps.prefill(request, 22) == 16
    steps.abort(request)
    assert [cache.match(list(range(n))).length for n in (12, 22)] == [8, 16]


def test_decode_memory_is_taken_ahead_and_windows_slide_by_what_is_fed() -> None:
    cache = AuditedCache(capacity=256, page_size=PAGE, components=("full", "swa"),
                         sliding_window=4)
    steps = steps_of(cache, ahead=8)
    prompt, answer = list(range(12)), list(range(100, 120))
    request = RequestState(len(prompt), len(answer) - 1)
    lease = steps.admit(request, prompt)
    steps.prefill(request, len(prompt))
    assert steps.grow(request, 1, answer)
    assert lease.num_tokens == 20 and request.extended == 8  # eight tokens ahead
    request.fed = 4
    assert steps.grow(request, 1, answer)  # within what it has: nothing asked
    assert lease.num_tokens == 20 and lease.start_of("swa") == 8
    assert steps.grow(request, 5, answer)
    # the window slid to the 12 + 4 tokens fed, not to the 20 the lease held
    assert lease.num_tokens == 28 and request.extended == 16
    assert lease.start_of("swa") == 12
    request.fed = 12
    assert steps.grow(request, 5, answer)  # at most what it feeds: 19 of the 20
    assert lease.num_tokens == 31 and request.extended == 19
    steps.finish(request)


def test_a_decode_stretch_saves_the_state_at_the_last_interval_it_passes() -> None:
    cache = mamba_cache(interval=8)
    steps = steps_of(cache, ahead=8)
    prompt, answer = list(range(12)), list(range(100, 130))
    request = RequestState(len(prompt), len(answer) - 1)
    lease = steps.admit(request, prompt)
    steps.prefill(request, len(prompt))
    assert steps.grow(request, 6, answer)  # feeds positions 12 .. 17: passes 16 only
    assert lease.tree_owned == 16
    request.fed = 6
    assert steps.grow(request, 2, answer)  # 18 .. 19: no interval
    assert lease.tree_owned == 16
    request.fed = 8
    assert steps.grow(request, 13, answer)  # 20 .. 32: passes 24 and 32, saves the last
    assert lease.tree_owned == 32 and steps.skipped_checkpoints == 0
    steps.finish(request)


def test_an_answer_not_to_be_cached_is_aborted_with_its_prompt_committed() -> None:
    cache = AuditedCache(capacity=256, page_size=PAGE)
    steps = steps_of(cache)
    prompt, answer = list(range(8)), list(range(100, 110))
    request = RequestState(len(prompt), len(answer) - 1, caches_answer=False)
    steps.admit(request, prompt)
    steps.prefill(request, len(prompt))
    assert steps.grow(request, 9, answer)
    assert steps.finish(request) is None and request.lease is None
    assert cache.match(prompt + answer).length == 8  # the prompt, not the answer


def test_a_state_without_a_free_slot_is_skipped_and_counted() -> None:
    cache = mamba_cache(states=2, interval=4)  # a working state and one to save
    steps = steps_of(cache)
    request = RequestState(16, 1)
    steps.admit(request, list(range(16)))
    assert steps.prefill(request, 16) == 4 and steps.skipped_checkpoints == 3  # 8, 12, 16
    steps.abort(request)


def test_a_state_without_a_free_slot_raises_where_skipping_is_off() -> None:
    cache = mamba_cache(states=2, interval=4)
    steps = steps_of(cache, skip_unsaved=False)
    request = RequestState(16, 1)
    steps.admit(request, list(range(16)))
    with pytest.raises(OutOfSlotsError):
        steps.prefill(request, 16)
    assert request.computed == 8  # what was computed when the state at 8 found no slot
    steps.abort(request)
    assert request.lease is None and request.computed == 0


def test_a_decode_stretch_without_room_is_refused_and_changes_nothing() -> None:
    cache = AuditedCache(capacity=16, page_size=PAGE)
    steps = steps_of(cache)
    prompt, answer = list(range(16)), list(range(100, 110))
    request = RequestState(len(prompt), len(answer) - 1)
    steps.admit(request, prompt)
    steps.prefill(request, 16)
    snapshot = cache.snapshot()
    assert not steps.grow(request, 1, answer)
    assert cache.snapshot() == snapshot and request.extended == 0
    assert_refused(cache, OutOfSlotsError, lambda: steps.reserve(request, 1, answer))
    steps.abort(request)


def test_states_are_copied_in_at_the_start_and_out_at_every_save() -> None:
    cache, states = mamba_cache(interval=8), States()
    steps = steps_of(cache, states=states)
    serve(steps, list(range(20)), [100, 101])
    request = RequestState(20, 1)
    lease = steps.admit(request, list(range(20)))
    steps.start(request)
    assert lease.copy_state_from is not None and lease.state_slot is not None
    assert states.calls[-1] == ("copy", lease.copy_state_from, lease.state_slot)
    fresh = RequestState(9, 1)
    other = steps.admit(fresh, list(range(50, 59)))
    steps.start(fresh)
    assert states.calls[-1] == ("zero", other.state_slot, None)
    steps.prefill(fresh, 9, lambda request, stop: states.calls.append(("at", stop, None)))
    assert states.calls[-3:-1] == [("at", 8, None), ("copy", other.state_slot, states.calls[-2][2])]
    steps.abort(request)
    steps.abort(fresh)
