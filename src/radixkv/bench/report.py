"""Summaries and tables of a ``radixkv bench ops`` run: medians over rounds, ratios against
the peers, and the structural counts that show whether the trees' cache states agree."""

from __future__ import annotations

import statistics
from typing import Any

from .runner import Record

TARGET = 3.0
"""radixkv ÷ SGLang's Rust core the performance issue asks of every operation and shape."""
STAT_KEYS = ("ops_per_s", "p50_us", "p99_us", "mean_us")
COUNT_KEYS = ("filled_seqs", "prepared_reqs", "distinct_nodes", "query_kinds")
Shape = tuple[str, str, int]
"""(workload, components, page size)."""

# Spec §2/§3 reference values for the default N = 5000.
SPEC_REFERENCE = {
    "sequences": 5001, "total_tokens": 5_505_232, "longest": 2637, "avg_tokens": 1100,
    "first_len": 898, "root_tokens": [20953, 3649, 820, 24300],
    "sequences_sha256": "31874fb2d291b63ccb1c4dacefe31f2d7d50e82058c39ed0d87f575bca33ec50",
    "queries": 5001, "query_kinds": {"exact": 1614, "extended": 1669, "miss": 1718},
    "query_tokens": 4_008_739,
    "queries_sha256": "ada8d0345a8fed5eb5dae51b494dd42bd741b8ed8de57ebed0eeb37213543f47",
}

# The short-prompt workload's values for its default P = 20,000 (radixkv.bench.short).
SHORT_REFERENCE = {
    "sequences": 20_000, "total_tokens": 1_194_103, "longest": 80, "avg_tokens": 59,
    "first_len": 67, "root_tokens": [15376, 15745, 9337, 13663],
    "sequences_sha256": "083c0256786bb36a8bc4dd6ba3cfc1c32146a3103840c11947437346fac088e9",
    "queries": 20_000, "query_kinds": {"exact": 6749, "system": 6632, "miss": 6619},
    "query_tokens": 1_195_832,
    "queries_sha256": "ea536b01794cf5ce52ba5eb66ee74c10fa9d4a2edf3ae54ad9bea82543b9e64f",
}
REFERENCES = {("reference", 5000): SPEC_REFERENCE, ("short", 20_000): SHORT_REFERENCE}


def _shape(r: Record) -> Shape:
    return r.get("workload", "reference"), r["components"], r["page_size"]


def summarize(records: list[Record]) -> list[Record]:
    """Median of each statistic over rounds, per (workload, shape, tree, operation)."""
    groups: dict[tuple[Shape, str, str], list[Record]] = {}
    for r in records:
        groups.setdefault((_shape(r), r["tree"], r["op"]), []).append(r)
    out = []
    for ((workload, components, page), tree, op), rows in groups.items():
        row: Record = {"workload": workload, "components": components, "page_size": page,
                       "tree": tree, "op": op, "rounds": len(rows)}
        for key in STAT_KEYS:
            row[key] = statistics.median(r[key] for r in rows)
        row["ops_per_s_rounds"] = [r["ops_per_s"] for r in rows]
        out.append(row)
    return out


def ratios(summary: list[Record]) -> list[Record]:
    """radixkv's median ops/s over each peer's, per (workload, shape, operation)."""
    by_key = {(_shape(s), s["tree"], s["op"]): s for s in summary}
    out = []
    for (shape, tree, op), mine in by_key.items():
        if tree != "radixkv":
            continue
        row: Record = {"workload": shape[0], "components": shape[1], "page_size": shape[2],
                       "op": op}
        for peer in ("sglang-rust", "sglang-python"):
            theirs = by_key.get((shape, peer, op))
            if theirs is not None and theirs["ops_per_s"]:
                row[f"vs_{peer.removeprefix('sglang-')}"] = mine["ops_per_s"] / theirs["ops_per_s"]
        if len(row) > 4:
            out.append(row)
    return out


def counts(records: list[Record]) -> dict[tuple[str, str, int, str], Record]:
    """Structural counts and per-operation end states of each tree's first round, per
    (workload, components, page size, tree)."""
    out: dict[tuple[str, str, int, str], Record] = {}
    for r in records:
        if r["round"] != 0:
            continue
        entry = out.setdefault((*_shape(r), r["tree"]), {"end_state": {}})
        entry.update({k: v for k, v in r["counts"].items() if k in COUNT_KEYS})
        entry["end_state"][r["op"]] = r["end_state"]
    return out


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


def _count_text(entry: Record) -> str:
    parts = [f"{name}={entry[key]}" for key, name in (
        ("filled_seqs", "F"), ("prepared_reqs", "R"), ("distinct_nodes", "distinct_nodes"))
        if key in entry]
    if "query_kinds" in entry:
        kinds = entry["query_kinds"]
        parts.append("queries=" + "/".join(map(str, kinds.values())))
    return " ".join(parts)


def render_shape(shape: Shape, summary: list[Record], ratio_rows: list[Record],
                 count_map: dict[tuple[str, str, int, str], Record], trees: tuple[str, ...]
                 ) -> str:
    """The table of one (workload, components, page size): every tree's medians, the
    ratios against the peers and the structural counts."""
    workload, components, page = shape
    rows = [s for s in summary if _shape(s) == shape]
    if not rows:
        return ""
    rounds = max(s["rounds"] for s in rows)
    title = components if workload == "reference" else f"{workload}: {components}"
    lines = [f"== {title}, page {page}: median of {rounds} round(s) "
             "(ops/s; latencies in µs) ==",
             f"{'operation':<13} {'tree':<14} {'ops/s':>10} {'p50':>9} {'p99':>10} {'mean':>9}"]
    ops = list(dict.fromkeys(s["op"] for s in rows))
    for op in ops:
        first = True
        for tree in trees:
            match = [s for s in rows if s["op"] == op and s["tree"] == tree]
            if not match:
                continue
            s = match[0]
            lines.append(f"{op if first else '':<13} {tree:<14} {s['ops_per_s']:>10,.0f} "
                         f"{_fmt(s['p50_us']):>9} {_fmt(s['p99_us']):>10} "
                         f"{_fmt(s['mean_us']):>9}")
            first = False
    mine = [r for r in ratio_rows if _shape(r) == shape]
    if mine:
        lines.append(f"radixkv ÷ SGLang, median ops/s (target ≥ {TARGET:.0f}×):")
        lines.append(f"{'operation':<13} {'vs rust':>12} {'vs python':>12}")
        for r in mine:
            cells = []
            for peer in ("rust", "python"):
                value = r.get(f"vs_{peer}")
                cells.append("-" if value is None else
                             f"{value:.2f}{'' if value >= TARGET else f' <{TARGET:.0f}x'}")
            lines.append(f"{r['op']:<13} {cells[0]:>12} {cells[1]:>12}")
    lines.extend(render_counts(shape, count_map, trees))
    return "\n".join(lines)


def render_counts(shape: Shape, count_map: dict[tuple[str, str, int, str], Record],
                  trees: tuple[str, ...]) -> list[str]:
    keys = {t: (*shape, t) for t in trees}
    entries = {t: count_map[key] for t, key in keys.items() if key in count_map}
    if not entries:
        return []
    texts = {t: _count_text(e) for t, e in entries.items()}
    if len(set(texts.values())) == 1:
        lines = [f"counts: {next(iter(texts.values()))} (same for {', '.join(entries)})"]
    else:
        lines = ["counts DIFFER (cache states diverge; timings not strictly comparable):"]
        lines += [f"  {t:<14} {text}" for t, text in texts.items()]
    states = {t: e["end_state"] for t, e in entries.items()}
    ops = list(dict.fromkeys(op for s in states.values() for op in s))
    for op in ops:
        seen = {t: s.get(op) for t, s in states.items()}
        if len({repr(v) for v in seen.values()}) > 1:
            cells = ", ".join(f"{t} {v['tree_tokens']}/{v['free_slots']}"
                              for t, v in seen.items() if v)
            lines.append(f"  end state after {op} differs (tree tokens/free slots): {cells}")
    return lines


def check_reference(info: dict[str, Any]) -> list[str]:
    """Differences from the documented reference values (only the reference workload with
    N = 5000 and the short one with 20,000 prompts have them)."""
    expected = REFERENCES.get((info.get("workload", "reference"), info["num_seqs"]))
    if expected is None:
        return []
    return [f"{k}: {info.get(k)!r} != documented {v!r}" for k, v in expected.items()
            if info.get(k) != v]


def render_workload(info: dict[str, Any]) -> str:
    """The inputs' figures and SHA-256 values, and whether they match the documented ones."""
    kinds = ", ".join(f"{kind} {count}" for kind, count in info["query_kinds"].items())
    lines = [
        f"workload {info.get('workload', 'reference')}: N={info['num_seqs']}: "
        f"{info['sequences']} sequences, "
        f"{info['total_tokens']:,} tokens, longest {info['longest']}, avg_tokens "
        f"{info['avg_tokens']}, len(seqs[0]) {info['first_len']}, root tokens "
        f"{', '.join(map(str, info['root_tokens']))}",
        f"  sequences SHA-256 {info['sequences_sha256']}",
        f"  queries: {info['queries']} ({kinds}), {info['query_tokens']:,} tokens, SHA-256 "
        f"{info['queries_sha256']}",
    ]
    if (info.get("workload", "reference"), info["num_seqs"]) in REFERENCES:
        problems = check_reference(info)
        lines.append("  documented reference values: " + (
            "all match" if not problems else "DIFFER: " + "; ".join(problems)))
    return "\n".join(lines)
