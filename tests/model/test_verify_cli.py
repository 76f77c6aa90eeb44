"""``radixkv verify`` and ``radixkv demo`` (= ``make demo``) on small runs."""

from __future__ import annotations

import pytest

from radixkv import cli, demo, supported_combinations
from radixkv.cli import main

from .support import default_run

SMALL = ["--chats", "2", "--turns", "2", "--families", "1", "--questions", "1",
         "--page-size", "4"]


def test_verify_passes_and_prints_reuse_evictions_and_verdicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["verify", "--combo", "full+swa+chunked+mamba", "full", "--capacity", "160",
                 "--swa-capacity", "144", "--chunked-capacity", "144", "--no-progress", *SMALL])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("== ") == 2
    assert "swa 144 (window 20), chunked 144 (chunk 32), mamba 32 (track interval 8)" in out
    assert "reused:  full" in out and "swa" in out and "chunked" in out and "states" in out
    assert "evicted: full" in out and "own pool short: full" in out
    assert "tombstones (most at once): swa" in out
    assert "chat-0" in out and "fewshot-0" in out
    assert "FAIL" not in out
    assert "verify PASS: 2 of 2 runs" in out


def test_verify_fails_with_exit_code_1_when_the_cache_window_is_too_small(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["verify", "--combo", "full+swa", "--cache-window", "5", "--window", "12",
                 "--page-size", "1", "--chats", "3", "--turns", "3", "--decode", "12"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out and "logits rows differ" in out
    assert "verify FAIL: 0 of 1 runs" in out


def test_verify_fails_when_the_cache_chunk_differs_from_the_model_chunk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["verify", "--combo", "full+chunked", "--cache-chunk", "16", "--no-progress",
                 "--page-size", "16", "--chats", "3", "--turns", "3", "--decode", "12"])
    out = capsys.readouterr().out
    assert code == 1
    assert "chunked 256 (chunk 16)" in out and "window or chunk smaller" in out
    assert "verify FAIL: 0 of 1 runs" in out


def test_every_supported_combination_is_a_choice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for combo in supported_combinations():
        assert "+".join(combo) in text
    assert main(["verify", "--combo", "full+conv"]) == 2


def test_verify_draws_a_progress_bar_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--combo", "full", "--progress", *SMALL]) == 0
    err = capsys.readouterr().err
    assert "[" + "#" * 30 + "]" in err
    assert err.endswith("\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layers", "full,conv"], "unknown layer kind"),
        (["--combo", "full+chunked", "--page-size", "5"], "multiple of page_size 5"),
        (["--combo", "full", "--layers", "ssm"], "mamba"),
        (["--capacity", "8", "--combo", "full"], "pools too small"),
        (["--workload", "chat", "--chats", "1", "--heads", "3"], "multiple of heads"),
    ],
)
def test_bad_settings_exit_with_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "--page-size", "1", *args]) == 2
    assert message in capsys.readouterr().err


def test_bad_option_values_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--chats", "0"]) == 2
    assert "--chats" in capsys.readouterr().err


def test_demo_runs_verify_with_its_defaults_then_with_a_host_tier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[list[str] | None] = []

    def main_spy(argv: list[str] | None = None) -> int:
        calls.append(argv)
        return 0

    monkeypatch.setattr(cli, "main", main_spy)
    assert demo.main() == 0
    assert calls == [["verify"], ["verify", *demo.HOST_ARGS]]


def test_verify_passes_every_combination_by_default() -> None:
    """What ``make demo`` prints (test_exactness.py checks each run's report)."""
    run = default_run()
    runs = 2 * len(supported_combinations())  # page sizes 1 and 16
    assert run.code == 0
    assert f"verify PASS: {runs} of {runs} runs" in run.out
    assert run.out.count("PASS: ") == runs + 1
    assert "FAIL" not in run.out
