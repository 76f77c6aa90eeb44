"""The line budget: no source module grows past 400 lines (split it by concept instead)."""

from __future__ import annotations

from pathlib import Path

import pytest

BUDGET = 400
PACKAGE = Path(__file__).parent.parent / "src" / "radixkv"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_the_budget_sees_the_sources() -> None:
    assert len(SOURCES) > 50


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_every_source_module_is_within_the_line_budget(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= BUDGET, f"{path} has {lines} lines (budget {BUDGET})"
