"""The catalogue still fits the docs: every skip, substitution, server, variable and
stand-in file matches what a doc says, a skip that names a test is backed by the doc's own
text, and the extras the docs tell readers to install exist."""

from __future__ import annotations

import re
import sys

import pytest

from .blocks import ROOT, Unit, all_units, documents
from .catalogue import ENV, FILES, SERVERS, SKIPS, SUBS, Skip

UNITS = all_units()
TEXTS = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
         for path in documents()}


def matched(skip: Skip) -> list[Unit]:
    return [u for u in UNITS if u.doc == skip.doc and u.text.startswith(skip.start)]


@pytest.mark.parametrize("skip", SKIPS, ids=lambda skip: f"{skip.doc}:{skip.start}")
def test_every_skip_matches_a_unit_and_names_where_it_runs(skip: Skip) -> None:
    units = matched(skip)
    assert units, f"no unit of {skip.doc} starts with {skip.start!r}: drop the skip"
    if skip.runs_in is not None:
        assert (ROOT / skip.runs_in).exists()
        for unit in units:
            assert skip.runs_in in _section_text(unit), \
                f"{unit.name}: its section does not name {skip.runs_in}"


def _section_text(unit: Unit) -> str:
    """The doc's text from the unit's heading to the next heading of any level."""
    text = TEXTS[unit.doc]
    at = sum(len(line) + 1 for line in text.split("\n")[: unit.line - 1])  # the unit's offset
    # the last heading of that name above the unit (engines.md repeats its headings per engine)
    start = text.rindex(f"# {unit.section}\n", 0, at) if unit.section else 0
    following = re.search(r"^#+ ", text[start + 2:], re.MULTILINE)
    return text[start: start + 2 + following.start()] if following else text[start:]


def test_every_substitution_still_finds_its_text() -> None:
    stale = [sub for sub in SUBS
             if not any(sub.old in u.text for u in UNITS if u.doc == sub.doc)]
    assert stale == []


def test_every_server_and_stand_in_file_is_still_in_a_doc() -> None:
    assert all(any(server.start in u.text for u in UNITS) for server in SERVERS)
    assert all(any(path in u.text for u in UNITS if u.doc == doc) for doc, path in FILES)


def test_every_variable_the_runs_set_is_one_a_doc_tells_the_reader_to_set() -> None:
    assert all(any(name in text for text in TEXTS.values()) for name in ENV)


def test_the_extras_the_docs_install_exist() -> None:
    if sys.version_info < (3, 11):  # pragma: no cover
        pytest.skip("tomllib is Python 3.11's")
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    named = {extra for text in TEXTS.values()
             for group in re.findall(r"radixkv\[([a-z,]+)\]", text) for extra in group.split(",")}
    assert named and named <= extras, named - extras
