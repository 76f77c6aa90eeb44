"""Rounds, medians, ratios, the table and the JSON of ``radixkv bench tiers``."""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from .runner import latency_summary
from .tier_bench import TIER_OPS, TierBenchConfig, TierResult, host_hits, run_op, sizes

Record = dict[str, Any]


def _record(page: int, number: int, result: TierResult) -> Record:
    t = result.timing
    return {"page_size": page, "round": number, "op": result.op, "tier": result.tier,
            "count": t.count, "wall_s": t.wall, "ops_per_s": t.ops_per_s,
            "p50_us": t.p50_us if t.count else 0.0, "p99_us": t.p99_us if t.count else 0.0,
            "latency_us": latency_summary(t), "counts": result.counts}


def run_rounds(config: TierBenchConfig, pages: list[int], rounds: int, ops: list[str],
               quiet: bool = False) -> tuple[list[Record], list[Record]]:
    """Every operation with the tier on and off in each round (the order alternating
    between rounds, so drift on a shared machine hits both); returns the records and, per
    page size, what the inputs were."""
    records, inputs = [], []
    for page in pages:
        paged = replace(config, page_size=page)
        size = sizes(paged)
        items = host_hits(paged, size)
        inputs.append({"page_size": page, "sequences": len(size.seqs),
                       "tree_tokens": size.tree_tokens, "device_slots": size.device,
                       "host_slots": size.host, "host_hit_sequences": len(items)})
        for number in range(rounds):
            for op in ops:
                order = (True, False) if number % 2 == 0 else (False, True)
                for on in order:
                    if not quiet:
                        print(f"  page {page}, round {number + 1}/{rounds}: {op} "
                              f"(tier {'on' if on else 'off'})", file=sys.stderr, flush=True)
                    records.append(_record(page, number, run_op(op, paged, size, on, items)))
                    gc.collect()
    return records, inputs


def summarize(records: list[Record]) -> list[Record]:
    """Per (page size, operation): the medians over rounds of each tier, and the ratio of
    tier-on ops/s to tier-off ops/s (median of the per-round ratios)."""
    groups: dict[tuple[int, str], dict[str, list[Record]]] = {}
    for r in records:
        groups.setdefault((r["page_size"], r["op"]), {}).setdefault(r["tier"], []).append(r)
    out = []
    for (page, op), tiers in groups.items():
        row: Record = {"page_size": page, "op": op}
        for tier, rows in tiers.items():
            row[tier] = {"ops_per_s": statistics.median(x["ops_per_s"] for x in rows),
                         "p50_us": statistics.median(x["p50_us"] for x in rows),
                         "rounds": len(rows)}
        pairs = zip(tiers.get("host", []), tiers.get("off", []))
        per_round = [h["ops_per_s"] / o["ops_per_s"] for h, o in pairs if o["ops_per_s"]]
        row["ratio_rounds"] = per_round
        row["ratio"] = statistics.median(per_round) if per_round else None
        out.append(row)
    return out


def render(summary: list[Record], inputs: list[Record]) -> str:
    lines = []
    for entry in inputs:
        page = entry["page_size"]
        lines.append(f"\n== page {page}: {entry['sequences']} sequences, tree of "
                     f"{entry['tree_tokens']:,} tokens, device {entry['device_slots']:,} "
                     f"slots, host {entry['host_slots']:,}; {entry['host_hit_sequences']} "
                     "sequences hit the host ==")
        lines.append(f"{'operation':<17} {'off ops/s':>11} {'off p50':>9} {'host ops/s':>11} "
                     f"{'host p50':>9} {'on/off':>7}")
        for row in summary:
            if row["page_size"] != page:
                continue
            off, host = row.get("off", {}), row.get("host", {})
            ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
            lines.append(f"{row['op']:<17} {off.get('ops_per_s', 0):>11,.0f} "
                         f"{off.get('p50_us', 0):>9.1f} {host.get('ops_per_s', 0):>11,.0f} "
                         f"{host.get('p50_us', 0):>9.1f} {ratio:>7}")
    lines.append("(p50 in µs; on/off = median over rounds of tier-on ops/s ÷ tier-off ops/s; "
                 "copy engine: NumpyCopyEngine without buffers, bookkeeping only)")
    return "\n".join(lines)


def run_tiers(args: argparse.Namespace) -> int:
    """``radixkv bench tiers``: run, print the table, optionally write JSON."""
    config = TierBenchConfig(num_seqs=args.num_seqs, device_share=args.device_share,
                             evict_batch=args.evict_batch, verify=args.verify)
    pages = list(dict.fromkeys(args.page_size))
    ops = list(dict.fromkeys(args.ops))
    records, inputs = run_rounds(config, pages, args.rounds, ops, args.quiet)
    summary = summarize(records)
    print(render(summary, inputs))
    if args.json is not None:
        document = {
            "machine": {"platform": platform.platform(), "python": platform.python_version()},
            "options": {k: (str(v) if isinstance(v, Path) else v)
                        for k, v in vars(args).items()},
            "config": asdict(config), "copy_engine": "NumpyCopyEngine (no buffers)",
            "inputs": inputs, "results": records, "summary": summary,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=1) + "\n")
        print(f"\nwrote {args.json}")
    return 0


__all__ = ["TIER_OPS", "run_rounds", "run_tiers", "summarize"]
