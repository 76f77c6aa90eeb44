"""Summaries and tables of a ``radixkv bench ops`` run: medians over rounds, ratios against
the peers, and the structural counts that show whether the trees' cache states agree."""

from __future__ import annotations

import statistics
from typing import Any

from .runner import Record

TARGET = 2.0
STAT_KEYS = ("ops_per_s", "p50_us", "p99_us", "mean_us")
COUNT_KEYS = ("filled_seqs", "prepared_reqs", "distinct_nodes", "query_kinds")

# Spec §2/§3 reference values for the default N = 5000.
SPEC_REFERENCE = {
    "sequences": 5001, "total_tokens": 5_505_232, "longest": 2637, "avg_tokens": 1100,
    "first_len": 898, "root_tokens": [20953, 3649, 820, 24300],
    "sequences_sha256": "31874fb2d291b63ccb1c4dacefe31f2d7d50e82058c39ed0d87f575bca33ec50",
    "queries": 5001, "query_kinds": {"exact": 1614, "extended": 1669, "miss": 1718},
    "query_tokens": 4_008_739,
    "queries_sha256": "ada8d0345a8fed5eb5dae51b494dd42bd741b8ed8de57ebed0eeb37213543f47",
}


def summarize(records: list[Record]) -> list[Record]:
    """Median of each statistic over rounds, per (shape, tree, operation)."""
    groups: dict[tuple[str, int, str, str], list[Record]] = {}
    for r in records:
        groups.setdefault((r["components"], r["page_size"], r["tree"], r["op"]), []).append(r)
    out = []
    for (components, page, tree, op), rows in groups.items():
        row: Record = {"components": components, "page_size": page, "tree": tree, "op": op,
                       "rounds": len(rows)}
        for key in STAT_KEYS:
            row[key] = statistics.median(r[key] for r in rows)
        row["ops_per_s_rounds"] = [r["ops_per_s"] for r in rows]
        out.append(row)
    return out


def ratios(summary: list[Record]) -> list[Record]:
    """radixkv's median ops/s over each peer's, per (shape, operation)."""
    by_key = {(s["components"], s["page_size"], s["tree"], s["op"]): s for s in summary}
    out = []
    for (components, page, tree, op), mine in by_key.items():
        if tree != "radixkv":
            continue
        row: Record = {"components": components, "page_size": page, "op": op}
        for peer in ("sglang-rust", "sglang-python"):
            theirs = by_key.get((components, page, peer, op))
            if theirs is not None and theirs["ops_per_s"]:
                row[f"vs_{peer.removeprefix('sglang-')}"] = mine["ops_per_s"] / theirs["ops_per_s"]
        if len(row) > 3:
            out.append(row)
    return out


def counts(records: list[Record]) -> dict[tuple[str, int, str], Record]:
    """Structural counts and per-operation end states of each tree's first round."""
    out: dict[tuple[str, int, str], Record] = {}
    for r in records:
        if r["round"] != 0:
            continue
        entry = out.setdefault((r["components"], r["page_size"], r["tree"]), {"end_state": {}})
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
        parts.append("queries={exact}/{extended}/{miss}".format(**kinds))
    return " ".join(parts)


def render_shape(components: str, page: int, summary: list[Record], ratio_rows: list[Record],
                 count_map: dict[tuple[str, int, str], Record], trees: tuple[str, ...]) -> str:
    rows = [s for s in summary if s["components"] == components and s["page_size"] == page]
    if not rows:
        return ""
    rounds = max(s["rounds"] for s in rows)
    lines = [f"== {components}, page {page}: median of {rounds} round(s) "
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
    mine = [r for r in ratio_rows if r["components"] == components and r["page_size"] == page]
    if mine:
        lines.append(f"radixkv ÷ SGLang, median ops/s (target ≥ {TARGET:.0f}×):")
        lines.append(f"{'operation':<13} {'vs rust':>12} {'vs python':>12}")
        for r in mine:
            cells = []
            for peer in ("rust", "python"):
                value = r.get(f"vs_{peer}")
                cells.append("-" if value is None else
                             f"{value:.2f}{'' if value >= TARGET else ' <2x'}")
            lines.append(f"{r['op']:<13} {cells[0]:>12} {cells[1]:>12}")
    lines.extend(render_counts(components, page, count_map, trees))
    return "\n".join(lines)


def render_counts(components: str, page: int, count_map: dict[tuple[str, int, str], Record],
                  trees: tuple[str, ...]) -> list[str]:
    entries = {t: count_map[(components, page, t)] for t in trees
               if (components, page, t) in count_map}
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
    """Differences from the spec's reference values (only meaningful for N = 5000)."""
    if info["num_seqs"] != 5000:
        return []
    return [f"{k}: {info.get(k)!r} != spec {v!r}" for k, v in SPEC_REFERENCE.items()
            if info.get(k) != v]


def render_workload(info: dict[str, Any]) -> str:
    kinds = info["query_kinds"]
    lines = [
        f"workload: N={info['num_seqs']}: {info['sequences']} sequences, "
        f"{info['total_tokens']:,} tokens, longest {info['longest']}, avg_tokens "
        f"{info['avg_tokens']}, len(seqs[0]) {info['first_len']}, root tokens "
        f"{', '.join(map(str, info['root_tokens']))}",
        f"  sequences SHA-256 {info['sequences_sha256']}",
        f"  queries: {info['queries']} (exact {kinds['exact']}, extended {kinds['extended']}, "
        f"miss {kinds['miss']}), {info['query_tokens']:,} tokens, SHA-256 "
        f"{info['queries_sha256']}",
    ]
    if info["num_seqs"] == 5000:
        problems = check_reference(info)
        lines.append("  spec reference values: " + ("all match" if not problems else
                                                    "DIFFER: " + "; ".join(problems)))
    return "\n".join(lines)
