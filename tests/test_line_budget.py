"""The line budget, as tinygrad's CI keeps one: no source module grows past 400 lines (split
it by concept instead), and the library (everything but the tools around it: bench/, sim/,
model/, testing/, driver/) and each package stay within the size they had when the budget was set
(issue #32, 2026-12-04), rounded up a little. Lines are counted as code: blank lines and
comment-only lines do not count, docstrings do. Raising a cap is a decision: say why in the
commit that does it."""

from __future__ import annotations

from pathlib import Path

import pytest

MODULE_BUDGET = 400
PACKAGE = Path(__file__).parent.parent / "src" / "radixkv"
SOURCES = sorted(PACKAGE.rglob("*.py"))

TOOLS = ("bench", "sim", "model", "testing", "driver")
"""Packages around the library, not in it (benchmarks, simulator, reference model, kits,
and the request driver the model and the simulator share)."""

PACKAGE_CAPS = {
    "radixkv": 500,  # the top-level modules (__init__, cli, errors, ...)
    "bench": 3000,
    "cache": 2425,  # #32: the cache's parts name the references they hold, its verbs are declared
    "components": 1025,
    "core": 2875,  # #32: the tree's parts name the references they hold
    "driver": 225,
    "events": 1075,
    "host": 925,
    "integrations": 100,
    "integrations/sglang": 975,
    "integrations/vllm": 975,
    "memory": 850,
    "metrics": 575,
    "model": 1550,
    "sim": 3100,
    "storage": 2325,
    "testing": 1000,
}
"""Per package, the most lines of code it may hold."""

LIBRARY_CAP = 14_475
"""The most lines of code of the library (every package but :data:`TOOLS`)."""


def code_lines(path: Path) -> int:
    """Lines of ``path`` that are neither blank nor a comment alone."""
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return sum(1 for line in lines if line and not line.startswith("#"))


def package_of(path: Path) -> str:
    """The package ``path`` counts towards: its top-level subpackage (an integration's
    own), or ``radixkv`` for the top-level modules."""
    parts = path.relative_to(PACKAGE).parts
    if len(parts) == 1:
        return "radixkv"
    if parts[0] == "integrations" and len(parts) > 2:
        return f"integrations/{parts[1]}"
    return parts[0]


def sizes() -> dict[str, int]:
    out: dict[str, int] = {}
    for path in SOURCES:
        out[package_of(path)] = out.get(package_of(path), 0) + code_lines(path)
    return out


def test_the_budget_sees_the_sources() -> None:
    assert len(SOURCES) > 50 and sum(sizes().values()) > 10_000


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_every_source_module_is_within_the_line_budget(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MODULE_BUDGET, f"{path} has {lines} lines (budget {MODULE_BUDGET})"


def test_every_package_has_a_cap_and_stays_within_it() -> None:
    measured = sizes()
    assert set(measured) == set(PACKAGE_CAPS), "a package without a cap, or a cap without one"
    over = {name: (size, PACKAGE_CAPS[name]) for name, size in measured.items()
            if size > PACKAGE_CAPS[name]}
    assert not over, f"packages over their cap (lines, cap): {over}"


def test_the_library_stays_within_its_cap() -> None:
    library = sum(size for name, size in sizes().items() if name.split("/")[0] not in TOOLS)
    assert library <= LIBRARY_CAP, f"the library has {library} lines of code (cap {LIBRARY_CAP})"


def test_the_counter_counts_code_not_blank_or_comment_lines(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""Doc."""\n\n# a comment\nx = 1  # a trailing comment\n   \n')
    assert code_lines(sample) == 2
