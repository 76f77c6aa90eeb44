"""Human units: one capacity notation, ∞, ms below a second and s above, separators."""

from __future__ import annotations

import pytest

from radixkv.sim.units import percent, seconds, seconds_tick, tokens


@pytest.mark.parametrize(("count", "text"), [
    (None, "∞"), (512, "512"), (1_000, "1K"), (4_096, "4.096K"), (300_000, "300K"),
    (1_250_000, "1.25M"), (1_500_000, "1.5M"), (125_008, "125.008K"), (999_999, "999.999K"),
    (1_000_000_000, "1G"), (1_234_567, "1.234567M"),
])
def test_token_counts_take_one_notation_and_stay_exact(count: int | None, text: str) -> None:
    assert tokens(count) == text


@pytest.mark.parametrize(("value", "text"), [
    (None, "-"), (0.0, "0.0 ms"), (0.8503, "850.3 ms"), (0.0123, "12.3 ms"),
    (1.0, "1.00 s"), (113.7, "113.70 s"), (1234.567, "1,234.57 s"),
])
def test_durations_are_ms_below_a_second_and_s_from_it(value: float | None,
                                                        text: str) -> None:
    assert seconds(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0"), (0.005, "5 ms"), (0.25, "250 ms"), (1.5, "1.5 s"), (1200.0, "1,200 s"),
])
def test_axis_ticks_are_short_durations(value: float, text: str) -> None:
    assert seconds_tick(value) == text


def test_shares_are_percentages_or_a_dash() -> None:
    assert percent(0.1234) == "12.3%"
    assert percent(None) == "-"
