"""SGLang's own radix cache on a real engine (CPU), against the same engine with the radix
cache disabled: the baseline that a radixkv-backed cache must also meet.

A multi-turn chat workload (a shared 64-token system prompt, conversations of 2-3 turns, each
turn's prompt = previous prompt + previous output + new user tokens) runs greedily on the
tiny seeded Llama (``checkpoint.py``) at page sizes 1 and 4, with (a) ``disable_radix_cache``
and (b) SGLang's default cache. The greedy tokens must be identical and the logprobs equal
within 1e-5, while (b) reports cached prompt tokens on every later turn.

The negative control shows the comparison can fail: the final prompt with one early token
changed gives different outputs, so the model depends on the KV of early positions and a
cache that served wrong KV would not go unnoticed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .harness import ENGINE_SKIP_REASON
from .workload import (
    EVICTING_POOL_TOKENS,
    MAX_NEW_TOKENS,
    TURNS,
    Run,
    assert_same,
)

pytest.importorskip("sglang", reason=ENGINE_SKIP_REASON)
pytest.importorskip("sgl_kernel", reason=ENGINE_SKIP_REASON)

REGISTERED_NAME = "sglang-default-via-registry"  # sglang_default_backend.NAME


BASELINES: dict[str, dict[str, Any]] = {
    "no_cache": {"disable_radix_cache": True},
    "radix": {},
    # a KV pool too small for the workload's history: the tree must evict
    "radix_evicting": {"max_total_tokens": EVICTING_POOL_TOKENS},
}
"""Engine arguments of the baseline runs (other test modules reuse them by name)."""


@pytest.fixture(scope="module", params=[1, 4], ids=lambda p: f"page{p}")
def runs(request: pytest.FixtureRequest, workload_run: Callable[..., tuple[Run, str]]
         ) -> dict[str, Any]:
    """The workload on (a) no radix cache and (b) SGLang's default radix cache, one engine
    at a time, at the page size of the parameter."""
    page_size: int = request.param
    out: dict[str, Any] = {"page_size": page_size}
    configs = dict(BASELINES)
    if page_size == 1:
        # the same default cache, selected by name through SGLang's registry
        configs["registry"] = {"radix_cache_backend": REGISTERED_NAME,
                               "preload": ["sglang_default_backend"]}
    for name, extra in configs.items():
        out[name], out[name + "_log"] = workload_run(name, page_size, **extra)
    return out


def test_radix_cache_matches_no_cache(runs: dict[str, Any]) -> None:
    ref, radix = runs["no_cache"], runs["radix"]
    assert len(ref.results) == len(radix.results) == max(TURNS)
    for turn, (a, b) in enumerate(zip(ref.results, radix.results)):
        assert ref.prompts[turn] == radix.prompts[turn]
        assert_same(a, b, f"page {runs['page_size']}, turn {turn}")
    assert_same(ref.control, radix.control, f"page {runs['page_size']}, control prompts")


def test_radix_cache_hits_on_later_turns(runs: dict[str, Any]) -> None:
    page = runs["page_size"]
    for turn, results in enumerate(runs["no_cache"].results):
        assert all(r.cached_tokens == 0 for r in results), f"no-cache engine, turn {turn}"
    radix: Run = runs["radix"]
    for turn in range(1, len(radix.results)):
        for prompt, result, conv in zip(radix.prompts[turn], radix.results[turn],
                                        radix.conversations[turn]):
            previous = radix.prompts[turn - 1][radix.conversations[turn - 1].index(conv)]
            # At least the previous turn's whole pages of prompt come from the cache (the
            # previous output is cached too, except its last token, whose KV was never
            # computed).
            assert result.cached_tokens >= len(previous) // page * page, (turn, conv)
            assert result.cached_tokens < len(prompt)
            assert result.prompt_tokens == len(prompt)


def test_model_is_not_blind_to_its_kv(runs: dict[str, Any]) -> None:
    for name in ("no_cache", "radix"):
        original, changed = runs[name].control
        diff = max(abs(x - y) for x, y in zip(original.output_logprobs,
                                              changed.output_logprobs))
        assert original.output_ids != changed.output_ids or diff > 1e-2, (
            f"{name}: changing prompt token 3 of {original.prompt_tokens} did not change the "
            f"greedy output (logprob diff {diff:.2e}): the model ignores early KV")
    # In the radix run the original final prompt is served almost entirely from the cache.
    original = runs["radix"].control[0]
    assert original.cached_tokens >= original.prompt_tokens - MAX_NEW_TOKENS - runs["page_size"]


def test_evicting_radix_cache_matches_no_cache(runs: dict[str, Any]) -> None:
    ref, small = runs["no_cache"], runs["radix_evicting"]
    for turn, (a, b) in enumerate(zip(ref.results, small.results)):
        assert_same(a, b, f"page {runs['page_size']}, small pool, turn {turn}")
    assert_same(ref.control, small.control, f"page {runs['page_size']}, small pool, control")
    # The small pool cannot keep every conversation's history: some later request finds
    # less of its prompt cached than with the big pool.
    small_hits = [r.cached_tokens for turn in small.results[1:] for r in turn]
    big_hits = [r.cached_tokens for turn in runs["radix"].results[1:] for r in turn]
    small_hits.append(small.control[0].cached_tokens)
    big_hits.append(runs["radix"].control[0].cached_tokens)
    assert any(s < b for s, b in zip(small_hits, big_hits)), (small_hits, big_hits)


def test_registered_backend_is_used_and_matches(runs: dict[str, Any]) -> None:
    if "registry" not in runs:
        pytest.skip("run at page size 1 only")
    assert f"source=registered('{REGISTERED_NAME}')" in runs["registry_log"]
    for turn, (a, b) in enumerate(zip(runs["radix"].results, runs["registry"].results)):
        assert_same(a, b, f"registered backend, turn {turn}")
        assert [r.cached_tokens for r in a] == [r.cached_tokens for r in b]
