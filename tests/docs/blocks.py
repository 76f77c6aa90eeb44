"""The fenced blocks of README.md and docs/*.md, cut into the units a reader would run: a
python block whole (a doctest when it starts with ``>>>``, else a script), a sh block one
command at a time (a backslash continues a command; blank and comment lines are dropped)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = frozenset({"python"})
SHELL = frozenset({"sh", "bash"})
NOT_RUN = frozenset({"", "text"})
"""Fence languages that hold no code to run (diagrams, sample output). Any other language
is an error until it gets a runner here, so that no new kind of block goes unrun."""

_FENCE = re.compile(r"^```(\S*)\s*$")
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Block:
    doc: str
    """The document's path relative to the repository root."""
    line: int
    """The 1-based line of the opening fence."""
    lang: str
    text: str
    section: str = ""
    """The heading above it."""


@dataclass(frozen=True)
class Unit:
    doc: str
    line: int
    """The 1-based line where the unit starts (a command: its first line)."""
    kind: str
    """``doctest``, ``script`` or ``sh``."""
    text: str
    section: str = ""

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def program(self) -> str:
        """A command's program: its first word after any ``NAME=value`` assignments."""
        words = [word for word in _words(self.text) or [] if not _ENV_WORD.match(word)]
        return words[0] if words else ""


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """Every fenced block of ``path``; raises ``ValueError`` for a fence left open."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    start: int | None = None
    lang = section = ""
    for number, line in enumerate(lines, 1):
        fence = _FENCE.match(line)
        if fence is None:
            if start is None and line.startswith("#"):
                section = line.lstrip("#").strip()
            continue
        if start is None:
            start, lang = number, fence.group(1)
        else:
            text = "\n".join(lines[start:number - 1]) + "\n"
            found.append(Block(path.relative_to(root).as_posix(), start, lang, text, section))
            start = None
    if start is not None:
        raise ValueError(f"{path}:{start}: a fence that is never closed")
    return found


def units(block: Block) -> list[Unit]:
    """What a reader runs of ``block``; ``ValueError`` for a language without a runner."""
    if block.lang in NOT_RUN:
        return []
    if block.lang in PYTHON:
        doctest = block.text.lstrip().startswith(">>>")
        kind = "doctest" if doctest else "script"
        return [Unit(block.doc, block.line + 1, kind, block.text, block.section)]
    if block.lang in SHELL:
        return _commands(block)
    raise ValueError(f"{block.doc}:{block.line}: no runner for ```{block.lang} blocks "
                     "(tests/docs/blocks.py)")


def _commands(block: Block) -> list[Unit]:
    found: list[Unit] = []
    parts: list[str] = []
    first = 0
    for offset, line in enumerate(block.text.splitlines(), 1):
        if not parts and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not parts:
            first = block.line + offset
        parts.append(line)
        text = "\n".join(parts)
        if not line.rstrip().endswith("\\") and _words(text) is not None:
            found.append(Unit(block.doc, first, "sh", text, block.section))
            parts = []
    if parts:
        raise ValueError(f"{block.doc}:{first}: a command continued past the block's end")
    return found


def _words(command: str) -> list[str] | None:
    """The words of ``command`` as the shell splits them; ``None`` while a quote is open."""
    try:
        return shlex.split(command.replace("\\\n", " "), comments=True)
    except ValueError:
        return None


def all_units(root: Path = ROOT) -> list[Unit]:
    return [unit for path in documents(root) for block in blocks(path, root)
            for unit in units(block)]
