"""The README's API table lists every public call of ``PrefixCache`` (and its constructor)
with every keyword-only parameter, and nothing that is not there: it cannot fall behind."""

from __future__ import annotations

import inspect
import re

from radixkv import PrefixCache

from .blocks import ROOT

_CALL = re.compile(r"\b([A-Za-z_]\w*)\(([^()]*)\)")


def table(readme: str) -> list[str]:
    """The first cells of the table that starts with ``| call |``."""
    lines = readme.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| call |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line.split(" | ")[0])
    return rows


def listed(cells: list[str]) -> dict[str, set[str]]:
    """Each call named in code spans of ``cells`` -> the keywords written after it."""
    calls: dict[str, set[str]] = {}
    for cell in cells:
        for span in re.findall(r"`([^`]*)`", cell):
            for name, arguments in _CALL.findall(span):
                keywords = {part.split("=")[0].strip() for part in arguments.split(",")
                            if "=" in part}
                calls.setdefault(name, set()).update(keywords)
    return calls


def table_gaps(readme: str) -> list[str]:
    """What the table lacks or claims wrongly, one line each (none: it is complete)."""
    calls = listed(table(readme))
    public = {name for name in dir(PrefixCache)  # calls: BOUND_VERBS is a constant
              if not name.startswith("_") and callable(getattr(PrefixCache, name))}
    gaps = [f"{name}() is public but not in the table" for name in sorted(public - set(calls))]
    for name, keywords in sorted(calls.items()):
        if name != "PrefixCache" and name not in public:
            gaps.append(f"{name}() is in the table but not a public call of PrefixCache")
            continue
        function = PrefixCache.__init__ if name == "PrefixCache" else getattr(PrefixCache, name)
        parameters = inspect.signature(function).parameters.values()
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            known = {p.name for p in parameters}
            gaps += [f"{name}({word}=) is no parameter" for word in sorted(keywords - known)]
        required = {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}
        gaps += [f"{name}() lacks {word}=" for word in sorted(required - keywords)]
    return gaps


README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_api_table_lists_every_public_call_and_keyword() -> None:
    assert table_gaps(README) == []
    assert len(listed(table(README))) > 25


def test_a_missing_row_or_keyword_or_a_stale_call_is_reported() -> None:
    row = next(line for line in README.splitlines() if line.startswith("| `poll()`"))
    assert "poll() is public but not in the table" in table_gaps(README.replace(row, ""))
    without = README.replace("max_match=, load_back=)", "max_match=)")
    assert table_gaps(without) == ["admit() lacks load_back="]
    stale = README.replace("`reset()`", "`reset()`, `frobnicate(x, hard=)`")
    assert table_gaps(stale) == ["frobnicate() is in the table but not a public call of "
                                 "PrefixCache"]
    wrong = README.replace("wait(lease)", "wait(lease, timeout=)")
    assert table_gaps(wrong) == ["wait(timeout=) is no parameter"]
