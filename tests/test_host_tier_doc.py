"""The worked example of docs/host-tier.md is executable documentation: run it as a doctest."""

import doctest
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "host-tier.md"


def test_the_host_tier_worked_example_runs_as_written() -> None:
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 30
    assert result.failed == 0
