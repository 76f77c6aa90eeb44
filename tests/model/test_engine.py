"""The reference engine: how it uses the cache (admission, reuse across turns, interleaving,
preemption) and what it refuses."""

from __future__ import annotations

import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.cache import Lease
from radixkv.errors import ConfigError, OutOfSlotsError
from radixkv.model import Decoder, Engine, ModelConfig, RequestSpec, compare, verify

from .support import model_reference, reference, small_cache, workload

BIG = 4096


def _engine(combo: tuple[str, ...], page: int = 1, running: int = 1) -> Engine:
    """An engine over a cache too big to evict; one request at a time unless ``running``."""
    config = small_cache(combo, page, capacity=BIG)
    return Engine(model_reference(combo).decoder, PrefixCache(config), chunk=8,
                  max_running=running)


def test_follow_up_turn_reuses_the_previous_prompt_and_all_fed_back_outputs() -> None:
    """The last sampled token is never fed back, so it is the only one not cached."""
    engine = _engine(("full",))
    first = RequestSpec(0, "chat", tuple(range(1, 40)), decode=5)
    second = RequestSpec(1, "chat", (7, 8, 9), decode=5, parent=0)
    records = engine.run([first, second])
    assert records[0].reused == 0
    assert records[1].prompt == (*records[0].sequence, 7, 8, 9)
    assert records[1].reused == len(records[0].sequence) - 1


def test_a_whole_cached_prompt_still_recomputes_its_last_token() -> None:
    engine = _engine(("full", "swa"))
    prompt = tuple(range(1, 30))
    records = engine.run([RequestSpec(0, "a", prompt, 3), RequestSpec(1, "a", prompt, 3)])
    assert records[1].reused == len(prompt) - 1
    assert len(records[1].logits) == 1 + 3 - 1
    assert compare(records[1], model_reference(("full", "swa"))) is None


def test_mamba_reuse_starts_from_a_copied_state() -> None:
    combo = ("full", "mamba")
    engine = _engine(combo)
    prompt = tuple(range(1, 50))
    records = engine.run([RequestSpec(0, "a", prompt, 2), RequestSpec(1, "a", prompt, 2)])
    assert records[1].lent["mamba"] == 1 and records[1].reused == 48  # the last page boundary
    assert compare(records[1], model_reference(combo)) is None


def test_chunked_reuse_lends_the_window_of_the_open_chunk_only() -> None:
    """A prompt reused up to 45 tokens (chunks of 32): the cache lends the chunked KV of
    positions 32..44 only; positions 0..31 of a finished chunk are never read again."""
    combo = ("full", "chunked")
    engine = _engine(combo)
    prompt = tuple(range(1, 47))
    records = engine.run([RequestSpec(0, "a", prompt, 2), RequestSpec(1, "a", prompt, 2)])
    assert records[1].reused == 45
    assert records[1].lent == {"full": 45, "chunked": 45 - 32}
    assert compare(records[1], model_reference(combo)) is None
    assert engine.stats.window_misses == 0


def test_decoding_into_a_new_chunk_hands_back_the_finished_chunk() -> None:
    """slide_window releases the request's own chunked slots of a chunk once the next one
    starts; the layers never needed them, so the run stays exact."""
    combo = ("full", "chunked")
    engine = _engine(combo)
    released: list[int] = []
    slide = engine.cache.slide_window

    def spy(lease: Lease, computed: int | None = None) -> int:
        released.append(slide(lease, computed))
        return released[-1]

    engine.cache.slide_window = spy  # type: ignore[method-assign]
    records = engine.run([RequestSpec(0, "a", tuple(range(1, 30)), 8)])
    # the prompt's 29 tokens were committed to the tree; positions 29.. decode, and token 32
    # opens chunk 1, so the lease's own slots of chunk 0 (positions 29..31) go back
    assert sum(released) == 3 and released.count(3) == 1
    assert compare(records[0], model_reference(combo)) is None


def test_requests_interleave_up_to_max_running() -> None:
    engine = _engine(("full", "swa", "mamba"), page=16, running=3)
    records = engine.run(workload())
    assert engine.stats.peak_running == 3
    assert engine.stats.admitted == len(records)
    assert {record.attempts for record in records} == {1}


def test_a_turn_waits_for_the_previous_one() -> None:
    engine = _engine(("full",))
    specs = [RequestSpec(0, "c", (1, 2, 3), 4), RequestSpec(1, "c", (4,), 4, parent=0),
             RequestSpec(2, "d", (5, 6), 4)]
    records = engine.run(specs)
    assert [record.spec.rid for record in records] == [0, 1, 2]
    assert records[1].prompt[:7] == records[0].sequence


def test_a_request_larger_than_the_pool_raises() -> None:
    cache = PrefixCache(CacheConfig(capacity=16, page_size=4))
    engine = Engine(reference(("full",)).decoder, cache)
    with pytest.raises(OutOfSlotsError):
        engine.run([RequestSpec(0, "a", tuple(range(1, 40)), 2)])


def test_a_model_with_ssm_layers_needs_the_mamba_component() -> None:
    cache = PrefixCache(CacheConfig(capacity=64))
    with pytest.raises(ConfigError, match="mamba"):
        Engine(Decoder(ModelConfig(layers=("ssm", "full"))), cache)


@pytest.mark.parametrize(("layers", "combo"), [
    (("swa", "full", "swa"), ("full",)),
    (("chunked", "full", "chunked"), ("full",)),
    (("swa", "chunked", "full"), ("full", "chunked")),
])
def test_window_layers_without_their_component_read_full_slots_and_stay_exact(
    layers: tuple[str, ...], combo: tuple[str, ...]
) -> None:
    report = verify(reference(layers), small_cache(combo, 16), workload(), chunk=20,
                    max_running=3)
    assert report.passed and report.reuse_share > 0.4


def test_a_bad_workload_is_refused() -> None:
    engine = _engine(("full",))
    with pytest.raises(ValueError, match="parent"):
        engine.run([RequestSpec(0, "a", (1,), 1, parent=1), RequestSpec(1, "a", (2,), 1)])
    with pytest.raises(ValueError, match="duplicate"):
        engine.run([RequestSpec(0, "a", (1,), 1), RequestSpec(0, "a", (2,), 1)])
    with pytest.raises(ValueError, match="decode"):
        RequestSpec(0, "a", (1,), 0)
