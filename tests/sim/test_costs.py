"""The cost model's formulas, and how an engine turns them into step times."""

from __future__ import annotations

import pytest

from radixkv.sim.costs import PRESETS, CostModel

from .support import request, run, tokens

MODEL = CostModel("test", full_layers=2, swa_layers=1, ssm_layers=1, window=10,
                  overhead=1.0, weights=2.0, linear=0.5, attn_pair=0.01, kv_read=0.1,
                  ssm_token=0.2, ssm_state=3.0)


def test_matmuls_are_memory_bound_until_the_batch_is_large() -> None:
    assert MODEL.matmuls(1) == 1.0 + 2.0
    assert MODEL.matmuls(10) == 1.0 + 5.0


def test_prefill_attention_grows_with_context_and_caps_at_the_window() -> None:
    # 4 new tokens after 6: mean context 6 + 2.5 = 8.5 (under the window of 10)
    assert MODEL.prefill(4, 6) == pytest.approx(2 * 4 * 8.5 * 0.01 + 4 * 8.5 * 0.01 + 4 * 0.2)
    # after 100: full layers see 102.5 each, the window layer 10
    assert MODEL.prefill(4, 100) == pytest.approx(2 * 4 * 102.5 * 0.01 + 4 * 10 * 0.01 + 0.8)


def test_decode_reads_every_cached_token_and_each_state() -> None:
    assert MODEL.decode(3, 300, 30) == pytest.approx((2 * 300 + 30) * 0.1 + 3 * 3.0)


def test_layer_mixes_keep_the_layer_count() -> None:
    base = PRESETS["8b-h100"]
    swa = base.with_layers(("full", "swa"), 4096)
    mamba = base.with_layers(("full", "mamba"), None)
    both = base.with_layers(("full", "swa", "mamba"), 512)
    assert (swa.full_layers, swa.swa_layers, swa.ssm_layers) == (8, 24, 0)
    assert (mamba.full_layers, mamba.swa_layers, mamba.ssm_layers) == (8, 0, 24)
    assert (both.full_layers, both.swa_layers, both.ssm_layers, both.window) == (8, 12, 12, 512)
    assert base.with_layers(("full",), None) == base


def test_an_engine_charges_each_step_by_the_model() -> None:
    # linear 0.5/token, weights 0, overhead 1, no attention: an 8-token prefill takes
    # 1 + 4 = 5 s; each decode step of one request 1 + 0.5 = 1.5 s
    model = CostModel("linear", full_layers=1, overhead=1.0, weights=0.0, linear=0.5,
                      attn_pair=0.0, kv_read=0.0)
    record = run([request(0, 0.0, tokens(0, 8), output=3)], cost=model).records[0]
    assert record.first_token == 5.0
    assert record.finished == 5.0 + 2 * 1.5
