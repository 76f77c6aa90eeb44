"""Tests of the radixkv command line (argument handling; the demo itself is tested elsewhere)."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from radixkv.cli import main


def test_no_subcommand_prints_help_and_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "usage: radixkv" in err
    assert "demo" in err


def test_unknown_subcommand_prints_help_and_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err
    assert "usage: radixkv" in err


def test_help_returns_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "usage: radixkv" in capsys.readouterr().out


def test_demo_runs_radixkv_demo_main(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_main() -> int:
        calls.append("main")
        return 7

    fake = types.ModuleType("radixkv.demo")
    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "radixkv.demo", fake)
    assert main(["demo"]) == 7
    assert calls == ["main"]


def test_python_dash_m_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "radixkv"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "usage: radixkv" in result.stderr
