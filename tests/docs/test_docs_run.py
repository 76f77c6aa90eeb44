"""Every python and sh block of README.md and docs/*.md runs as written: doctests must
reproduce their output, scripts and commands must exit 0, servers must come up on the
addresses the recipe names (one interface, unless the catalogue says why not). A new block
runs by default; only the catalogue's few skips do not (their reason is printed by -rs)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from radixkv.storage.servers import missing

from .blocks import Unit, all_units
from .catalogue import ENV, FILES, NEEDS, SERVERS, SKIPS, SUBS, Skip
from .runner import DocRun, Setting

UNITS = all_units()


def skip_of(unit: Unit) -> Skip | None:
    return next((s for s in SKIPS if s.doc == unit.doc and unit.text.startswith(s.start)), None)


def setting(doc: str) -> Setting:
    return Setting(subs=tuple(sub for sub in SUBS if sub.doc == doc), servers=SERVERS,
                   env=ENV, files={path: write for (owner, path), write in FILES.items()
                                   if owner == doc})


def why_not_here(unit: Unit) -> str | None:
    """Why a program ``unit`` needs is missing here (a store's server, Dynamo's indexer)."""
    for word, program in NEEDS.items():
        if word in unit.text.lower() and (reason := missing(program)) is not None:
            return reason
    section = [u for u in UNITS if u.doc == unit.doc and u.section == unit.section]
    if any("dynamo.indexer" in u.text for u in section) \
            and importlib.util.find_spec("dynamo") is None:
        return "dynamo.indexer is not installed (pip install ai-dynamo-runtime==1.6.1)"
    return None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, DocRun]]:
    started: dict[str, DocRun] = {}
    yield started
    for run in started.values():
        run.close()


def test_the_runner_sees_every_kind_of_block() -> None:
    kinds = {unit.kind for unit in UNITS}
    assert kinds == {"doctest", "script", "sh"}
    assert len(UNITS) > 50
    # the engines' commands need their own venvs (each names the test that runs it there)
    assert len([skip for skip in SKIPS if skip.doc != "docs/engines.md"]) < len(UNITS) // 3


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_every_doc_block_runs_as_written(unit: Unit, runs: dict[str, DocRun],
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    skip = skip_of(unit)
    if skip is not None:
        where = f" ({skip.runs_in})" if skip.runs_in else ""
        pytest.skip(f"{unit.name}: {skip.reason}{where}")
    reason = why_not_here(unit)
    if reason is not None:
        pytest.skip(f"{unit.name}: {reason}")
    if unit.doc not in runs:
        folder = Path(tmp_path_factory.mktemp(unit.doc.replace("/", "-")))
        units = [u for u in UNITS if u.doc == unit.doc]
        runs[unit.doc] = DocRun(units, setting(unit.doc), folder)
    skipped = {u.name for u in UNITS if skip_of(u) is not None or why_not_here(u) is not None}
    outcome = runs[unit.doc].outcome(unit, skipped)
    assert outcome.ok, f"{unit.name} as run:\n{runs[unit.doc].text(unit)}\n{outcome.output}"
