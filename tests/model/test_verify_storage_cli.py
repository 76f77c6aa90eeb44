"""``radixkv verify`` with a storage tier (``--storage-dir``): a FileStorage the cache
writes to and restores from; a second run on the same folder starts from the first's pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from radixkv.cli import main

ARGS = ["verify", "--combo", "full+mamba", "--capacity", "128", "--mamba-states", "12",
        "--host-capacity", "256", "--host-states", "24", "--prefetch-threshold", "16",
        "--chats", "4", "--families", "2", "--page-size", "16", "--no-progress"]


def _restored(out: str) -> int:
    found = re.search(r"storage tier: restored (\d+) prompt tokens", out)
    assert found is not None, out
    return int(found.group(1))


def test_verify_with_a_storage_dir_restores_from_l3_and_a_second_run_gains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*ARGS, "--storage-dir", str(tmp_path / "l3")]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert "verify PASS: 1 of 1 runs" in first and ", 0 faults" in first
    assert main([*args, "--wait-policy", "best_effort"]) == 0
    second = capsys.readouterr().out
    assert "verify PASS: 1 of 1 runs" in second
    assert 0 < _restored(first) < _restored(second)
    assert list((tmp_path / "l3" / "full+mamba-page16").rglob("*-*"))


def test_verify_without_a_storage_dir_has_no_storage_tier(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(ARGS) == 0
    assert "storage tier" not in capsys.readouterr().out


def test_a_storage_dir_without_a_host_tier_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["verify", "--combo", "full", "--storage-dir", str(tmp_path), "--no-progress"]
    assert main(args) == 2
    assert "needs a host tier" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--wait-policy", "never"], ["--prefetch-threshold", "-1"]])
def test_bad_storage_options_are_usage_errors(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "--combo", "full", *args]) == 2
    assert args[0] in capsys.readouterr().err
