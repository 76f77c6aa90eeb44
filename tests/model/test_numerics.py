"""The deterministic primitives: right values, and the same bits wherever the inputs live."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv.model.numerics import attend, exp_neg, matvec, rms_norm, soft_gate


def _relocated(array: np.ndarray, offset: int) -> np.ndarray:
    """A copy of ``array`` placed ``offset`` float64s into a fresh buffer (other alignment)."""
    buffer = np.empty(array.size + offset, dtype=np.float64)
    moved = buffer[offset:].reshape(array.shape)
    moved[...] = array
    return moved


def test_exp_neg_is_one_at_zero_monotone_and_zero_far_below() -> None:
    x = -np.linspace(0.0, 300.0, 3001)
    y = exp_neg(x)
    assert y[0] == 1.0
    assert np.all(np.diff(y) <= 0.0)
    assert np.all(y[x < -256.0] == 0.0)
    small = x >= -2.0
    assert np.allclose(y[small], np.exp(x[small]), rtol=x[small] ** 2 / 256 + 1e-12)


def test_matvec_and_rms_norm_match_their_definitions() -> None:
    rng = np.random.default_rng(0)
    matrix, vector = rng.standard_normal((7, 13)), rng.standard_normal(13)
    np.testing.assert_allclose(matvec(matrix, vector), matrix @ vector, rtol=1e-13, atol=1e-13)
    gain = rng.standard_normal(13)
    expected = vector / np.sqrt(np.mean(vector**2) + 1e-6) * gain
    np.testing.assert_allclose(rms_norm(vector, gain), expected, rtol=1e-13)


def test_attend_is_a_normalized_weighted_average() -> None:
    rng = np.random.default_rng(1)
    queries = rng.standard_normal((2, 4))
    keys, values = rng.standard_normal((9, 2, 4)), rng.standard_normal((9, 2, 4))
    out = attend(queries, keys, values)
    for head in range(2):
        scores = keys[:, head] @ queries[head] / 2.0
        weights = exp_neg(scores - scores.max())
        expected = weights @ values[:, head] / weights.sum()
        np.testing.assert_allclose(out[head], expected, rtol=1e-12, atol=1e-12)


def test_soft_gate_stays_inside_its_bounds() -> None:
    values = np.array([-1e9, -3.0, 0.0, 3.0, 1e9])
    gated = soft_gate(values, 0.05, 0.95)
    assert np.all((gated >= 0.05) & (gated <= 0.95))
    assert gated[2] == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize("positions", [1, 7, 129, 300])
def test_results_do_not_depend_on_where_the_inputs_live(positions: int) -> None:
    """Same values at other addresses and alignments give the same bits (no alignment- or
    layout-dependent code path in the primitives)."""
    rng = np.random.default_rng(positions)
    queries = rng.standard_normal((2, 8))
    keys, values = rng.standard_normal((positions, 2, 8)), rng.standard_normal((positions, 2, 8))
    matrix, vector = rng.standard_normal((64, 16)), rng.standard_normal(16)
    expected_attend = attend(queries, keys, values).tobytes()
    expected_matvec = matvec(matrix, vector).tobytes()
    for offset in (1, 2, 3, 5, 8):
        moved = attend(_relocated(queries, offset), _relocated(keys, offset),
                       _relocated(values, offset))
        assert moved.tobytes() == expected_attend
        assert matvec(_relocated(matrix, offset), _relocated(vector, offset)).tobytes() == (
            expected_matvec)
