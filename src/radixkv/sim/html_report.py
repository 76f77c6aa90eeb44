"""report.html: one page per command (a run, a replay, a sweep) with its warnings, the
comparison table of its runs, every picture written, and each run's full summary. Plain
HTML with the pictures beside it in the same folder; no script, no network."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from .summary import render, table

STYLE = """body{font-family:sans-serif;max-width:1250px;margin:1.5em auto;padding:0 1em}
table{border-collapse:collapse;font-size:90%}th,td{padding:3px 9px;text-align:right;
border-bottom:1px solid #ddd}th:first-child,td:first-child{text-align:left}
.warnings li{color:#9a3b00}figure{margin:1.5em 0}img{max-width:100%}
figcaption{color:#444;font-size:90%}pre{background:#f6f6f6;padding:.6em;overflow-x:auto}"""


@dataclass(frozen=True)
class Picture:
    """A picture written beside the report and what it shows."""

    path: Path
    caption: str


def warnings(runs: list[dict[str, Any]]) -> list[str]:
    """What a reader must know before trusting a run's figures: the load warning of each
    run (queues, overload) and requests rejected for want of memory."""
    found = []
    for run in runs:
        load = run.get("load") or {}
        if load.get("warning") is not None:
            found.append(f"{run['label']}: {load['warning']}")
        if run["rejected"]:
            found.append(f"{run['label']}: {run['rejected']:,} requests rejected "
                         "(they could not fit in memory even alone)")
    return found


def write_html(path: Path, document: dict[str, Any], heading: list[str],
               pictures: list[Picture], notes: list[str]) -> Path:
    """Write the page of ``document`` (report.json's content) to ``path``: ``heading``
    lines first, then ``notes`` and the runs' :func:`warnings`, the table, the pictures
    (referenced by their names, so the folder moves as a whole) and each run's summary."""
    runs = document["runs"]
    parts = [f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<title>radixkv sim: {escape(document['workload'])}</title>"
             f"<style>{STYLE}</style></head><body>",
             f"<h1>radixkv sim: {escape(document['workload'])}</h1>",
             *(f"<p>{escape(line)}</p>" for line in heading),
             "<h2>Warnings</h2>", _list([*notes, *warnings(runs)]),
             "<h2>Runs</h2>", _table(runs),
             "<h2>Pictures</h2>", *(_figure(picture, path.parent) for picture in pictures),
             "<h2>Each run</h2>", *(_details(run) for run in runs), "</body></html>\n"]
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _list(items: list[str]) -> str:
    if not items:
        return "<p>None.</p>"
    return ("<ul class=\"warnings\">" + "".join(f"<li>{escape(item)}</li>" for item in items)
            + "</ul>")


def _table(runs: list[dict[str, Any]]) -> str:
    head, rows = table(runs)
    cells = ["<tr>" + "".join(f"<th>{escape(cell)}</th>" for cell in head) + "</tr>"]
    cells += ["<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>"
              for row in rows]
    return "<table>" + "\n".join(cells) + "</table>"


def _figure(picture: Picture, folder: Path) -> str:
    name = picture.path.relative_to(folder).as_posix() if picture.path.is_relative_to(
        folder) else picture.path.as_posix()
    return (f"<figure><img src=\"{escape(name)}\" alt=\"{escape(picture.caption)}\">"
            f"<figcaption>{escape(picture.caption)}</figcaption></figure>")


def _details(run: dict[str, Any]) -> str:
    return (f"<details><summary>{escape(run['label'])}</summary>"
            f"<pre>{escape(render(run))}</pre></details>")
