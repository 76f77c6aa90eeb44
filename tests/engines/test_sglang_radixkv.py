"""radixkv as SGLang's radix cache (``--radix-cache-backend radixkv``, registered by the
``sglang.srt.plugins`` entry point) on a real engine (CPU, the tiny seeded Llama), against
the same engine with no radix cache and with SGLang's own cache, at page sizes 1 and 4.

- Exact: every greedy token equals the no-cache run and every logprob is within 1e-5, with
  a big pool, a pool too small for the history (eviction), and forced retraction
  (``SGLANG_TEST_RETRACT``); SGLang's strict memory checks run on every step and when idle,
  and a leak stops the scheduler (the run then fails).
- Reuse: the cached tokens of every request equal those of SGLang's default cache.
- Negative control: with ``RADIXKV_SGLANG_NEGATIVE_CONTROL=1`` the backend hands SGLang
  wrong KV indices for reused prefixes (every position the prefix's first row); the outputs
  must then differ from the no-cache run, which proves the comparison sees the KV the cache
  serves. (Reversed indices would not do: attention is blind to the order of a prefix's
  rows, whose keys carry their positions.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from .harness import ENGINE_SKIP_REASON
from .test_sglang_baseline import BASELINES
from .workload import EVICTING_POOL_TOKENS, Run, assert_same

pytest.importorskip("sglang", reason=ENGINE_SKIP_REASON)
pytest.importorskip("sgl_kernel", reason=ENGINE_SKIP_REASON)

STRICT = {"SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY": "1",
          "SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE": "1"}
RADIXKV: dict[str, dict[str, Any]] = {
    "radixkv": {"env": STRICT},
    "radixkv_evicting": {"max_total_tokens": EVICTING_POOL_TOKENS, "env": STRICT},
    "radixkv_retract": {"env": {**STRICT, "SGLANG_TEST_RETRACT": "1",
                                "SGLANG_TEST_RETRACT_INTERVAL": "2"}},
    "radixkv_negative": {"env": {**STRICT, "RADIXKV_SGLANG_NEGATIVE_CONTROL": "1"}},
    # the evicting pool over a host tier: evicted prefixes come back from host memory
    "radixkv_host": {"max_total_tokens": EVICTING_POOL_TOKENS,
                     "env": {**STRICT, "RADIXKV_SGLANG_HOST_TOKENS": "4096"}},
}


@pytest.fixture(scope="module", params=[1, 4], ids=lambda p: f"page{p}")
def runs(request: pytest.FixtureRequest, workload_run: Callable[..., tuple[Run, str]]
         ) -> dict[str, Any]:
    page_size: int = request.param
    out: dict[str, Any] = {"page_size": page_size}
    for name, extra in BASELINES.items():
        out[name], out[name + "_log"] = workload_run(name, page_size, **extra)
    for name, extra in RADIXKV.items():
        out[name], out[name + "_log"] = workload_run(name, page_size,
                                                     radix_cache_backend="radixkv", **extra)
    return out


def _results(run: Run) -> list[Any]:
    return [result for turn in run.results for result in turn] + run.control


@pytest.mark.parametrize("name", ["radixkv", "radixkv_evicting", "radixkv_retract",
                                  "radixkv_host"])
def test_radixkv_gives_the_tokens_and_logprobs_of_no_cache(runs: dict[str, Any],
                                                           name: str) -> None:
    ref, run = runs["no_cache"], runs[name]
    for turn, (a, b) in enumerate(zip(ref.results, run.results)):
        assert ref.prompts[turn] == run.prompts[turn]
        assert_same(a, b, f"{name}, page {runs['page_size']}, turn {turn}")
    assert_same(ref.control, run.control, f"{name}, page {runs['page_size']}, control")


@pytest.mark.parametrize("name", ["radixkv", "radixkv_evicting", "radixkv_retract",
                                  "radixkv_host"])
def test_the_engine_ran_radixkv_and_reused_prefixes(runs: dict[str, Any], name: str) -> None:
    log = runs[name + "_log"]
    assert "source=registered('radixkv')" in log, "the engine did not build radixkv's cache"
    assert sum(result.cached_tokens for result in _results(runs[name])) > 0


def test_a_host_tier_gives_back_what_the_evicting_pool_lost(runs: dict[str, Any]) -> None:
    evicting = [r.cached_tokens for r in _results(runs["radixkv_evicting"])]
    host = [r.cached_tokens for r in _results(runs["radixkv_host"])]
    whole = sum(r.cached_tokens for r in _results(runs["radixkv"]))
    print(f"\npage {runs['page_size']}, cached tokens: evicting pool {sum(evicting)}, "
          f"with a host tier {sum(host)}, whole pool {whole}")
    assert sum(host) > sum(evicting)


def test_retraction_happened_under_sglang_test_retract(runs: dict[str, Any]) -> None:
    # SGLang logs each forced round; the server-arguments line names "retraction" too, so
    # only a round that retracted a request counts
    assert re.search(r"#retracted_reqs: [1-9]", runs["radixkv_retract_log"])


@pytest.mark.parametrize("name, reference", [("radixkv", "radix"),
                                             ("radixkv_evicting", "radix_evicting")])
def test_radixkv_reuses_what_sglangs_own_cache_reuses(runs: dict[str, Any], name: str,
                                                      reference: str) -> None:
    ours = [result.cached_tokens for result in _results(runs[name])]
    theirs = [result.cached_tokens for result in _results(runs[reference])]
    assert ours == theirs


def test_wrong_kv_indices_change_the_outputs(runs: dict[str, Any]) -> None:
    """The negative control: reused prefixes read from the wrong rows must not go unseen."""
    ref, wrong = _results(runs["no_cache"]), _results(runs["radixkv_negative"])
    assert sum(result.cached_tokens for result in wrong) > 0
    differ = [a.output_ids != b.output_ids
              or max(abs(x - y) for x, y in zip(a.output_logprobs, b.output_logprobs)) > 1e-3
              for a, b in zip(ref, wrong)]
    assert any(differ), "wrong KV indices gave the outputs of no cache: the test is blind"
