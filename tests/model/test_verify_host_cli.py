"""``radixkv verify`` with a host tier, and the host-tier part of ``make demo``."""

from __future__ import annotations

import pytest

from radixkv import supported_combinations
from radixkv.cli import main

from .host_support import host_demo_run

SMALL_ARGS = ["--chats", "2", "--turns", "2", "--families", "1", "--questions", "1",
              "--page-size", "4"]


def test_verify_with_a_host_tier_prints_the_device_host_split(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["verify", "--combo", "full+mamba", "--capacity", "160", "--mamba-states", "8",
                 "--host-capacity", "1024", "--write-policy", "write_back", "--copy-delay", "2",
                 "--copy-seed", "1", "--copy-failures", "0.2", "--no-progress", *SMALL_ARGS])
    out = capsys.readouterr().out
    assert code == 0
    assert "host full 1024, mamba 64 (write_back)" in out
    assert "reused from: device alone" in out and "host memory" in out
    assert "host tier: backed up full" in out and "loaded back full" in out
    assert "verify PASS: 1 of 1 runs" in out


def test_verify_without_host_capacity_has_no_host_tier(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["verify", "--combo", "full", "--no-progress", *SMALL_ARGS]) == 0
    out = capsys.readouterr().out
    assert "host" not in out and "reused from" not in out


@pytest.mark.parametrize(
    "args",
    [["--host-capacity", "0"], ["--copy-failures", "1.5"], ["--write-policy", "never"],
     ["--copy-delay", "-1"]],
)
def test_bad_host_options_are_usage_errors(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "--combo", "full", *args]) == 2
    assert args[0] in capsys.readouterr().err


def test_a_host_capacity_that_is_not_whole_pages_is_rounded_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["verify", "--combo", "full", "--host-capacity", "1002", "--no-progress",
                 *SMALL_ARGS]) == 0
    assert "host full 1004 (write_through)" in capsys.readouterr().out


def test_the_demo_host_run_passes_and_serves_most_reuse_from_host_memory() -> None:
    """What the second half of ``make demo`` prints."""
    run = host_demo_run()
    runs = 2 * len(supported_combinations())
    assert run.code == 0
    assert f"verify PASS: {runs} of {runs} runs" in run.out
    assert run.out.count("  reused from: device alone ") == runs
    assert "FAIL" not in run.out
    for (combo, page), (config, report) in run.runs.items():
        assert config.host is not None and config.host.write_policy == "write_through"
        assert report.passed, (combo, page)
        assert report.host_share >= 0.45, (combo, page, report.host_share)
        assert report.engine.load_waits > 0
