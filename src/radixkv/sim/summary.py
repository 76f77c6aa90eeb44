"""The terminal summary of one or more simulation reports (see :mod:`radixkv.sim.report`)."""

from __future__ import annotations

from typing import Any

from .records import REASONS
from .units import seconds, tokens


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:5.1f}%"


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def render_bound(bound: dict[str, Any]) -> str:
    """The trace's reuse bound at one page size, overall and per namespace."""
    line = (f"trace's reuse bound at page {bound['page_size']}: "
            f"{_pct(bound['token_hit_rate']).strip()} of prompt tokens "
            f"({bound['reusable_tokens']:,} of {bound['prompt_tokens']:,}; every earlier "
            "prefix reused, page-exact)")
    spaces = bound["by_namespace"]
    if len(spaces) > 1:
        line += "\n  by namespace: " + "  ".join(
            f"{name} {_pct(space['token_hit_rate']).strip()}" for name, space in spaces.items())
    return line


def _load_lines(load: dict[str, Any]) -> list[str]:
    """Offered load against capacity, the spans, and a warning when the engines fell behind."""
    def number(value: float | None, digits: int = 0) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    lines = [f"load: offered {number(load['offered_tokens_per_s'])} tokens/s, served "
             f"{number(load['capacity_tokens_per_s'])} tokens/s while busy (offered load "
             f"{number(load['offered_load'], 2)}); simulated span "
             f"{number(load['simulated_span_s'], 1)} s for the trace's "
             f"{number(load['trace_span_s'], 1)} s; queueing "
             f"{100 * load['ttft_queue_share']:.0f}% of TTFT"]
    if load["warning"] is not None:
        lines.append(f"WARNING: {load['warning']}. TTFT is mostly queueing, and the hit "
                     "rate depends on the cost model (docs/simulator.md, Overload)")
    return lines


def render(report: dict[str, Any]) -> str:
    """A readable block for one run."""
    lines = [f"== {report['label']} ==",
             f"requests {report['requests']}  rejected {report['rejected']}  "
             f"preemptions {report['preempted']}  simulated {report['simulated_seconds']:.1f} s"
             f"  wall {report['wall_seconds']:.2f} s "
             f"({report['requests_per_wall_second']:,.0f} requests/s)",
             f"token hit rate {_pct(report['token_hit_rate'])}  "
             f"(unbounded cache: {_pct(report['ideal_hit_rate'])}, "
             f"gap {_pct(report['gap_to_unbounded'])})  "
             f"requests with a hit {_pct(report['request_hit_rate'])}",
             f"prefill tokens computed {report['prefill_tokens_computed']:,}  "
             f"saved {report['prefill_tokens_saved']:,}  "
             f"recomputed after preemption {report['recomputed_tokens']:,}"]
    bound = report.get("reuse_bound")
    if bound is not None:
        lines.append(f"trace's reuse bound {_pct(bound['token_hit_rate']).strip()} (every "
                     f"earlier prefix reused, page-exact): this run reached "
                     f"{_pct(_share(report['token_hit_rate'], bound['token_hit_rate'])).strip()}"
                     " of it")
    tiers = report["hit_rate_by_tier"]
    if tiers["host"] is not None:
        lines.append(f"token hit rate by tier: device {_pct(tiers['device']).strip()}  "
                     f"host {_pct(tiers['host']).strip()}  "
                     f"({report['config']['write_policy']}, host "
                     f"{tokens(report['config']['host_capacity'])} tokens)")
    turns = report.get("hit_rate_by_turn") or {}
    if turns:
        lines.append("hit rate by turn: " + "  ".join(
            f"{turn}: {_pct(rate).strip()}" for turn, rate in list(turns.items())[:12]))
    ttft, latency = report["ttft_s"], report["latency_s"]
    load = report.get("load")
    if load is not None:
        lines += _load_lines(load)
    lines.append(f"{'latency':<14}" + "".join(f"{f'p{p}':>12}" for p in (50, 90, 99)))
    split = [] if load is None else [("    queueing", load["ttft_queue_s"]),
                                     ("    service", load["ttft_service_s"])]
    for name, values in (("  TTFT", ttft), *split, ("  end-to-end", latency)):
        lines.append(f"{name:<14}" + "".join(f"{seconds(values[f'p{p}']):>12}"
                                             for p in (50, 90, 99)))
    total = report["prompt_tokens"] or 1
    lines.append("prompt tokens by outcome:")
    for name in REASONS:
        count = report["losses"][name]
        if count:
            lines.append(f"  {name:<18} {count:>14,}  {100 * count / total:5.1f}%")
    for index, engine in enumerate(report["engines"]):
        evicted = ", ".join(f"{kind} {sum(v.values()):,}" for kind, v in
                            engine["evictions"].items())
        lines.append(f"engine {index}: steps {engine['steps']:,}  evicted: {evicted}")
    return "\n".join(lines)


def table(reports: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The comparison table of a sweep or a replay, one row per run, cells as text: its
    header and rows (the terminal and report.html show the same)."""
    host = any(r["hit_rate_by_tier"]["host"] is not None for r in reports)
    head = ["run", "hit rate", "unbounded", "bound", "TTFT p50", "TTFT p99", "load",
            "preempt", "rejected"] + (["of it host"] if host else [])
    rows = []
    for report in reports:
        ttft = report["ttft_s"]
        rows.append([report["label"], _pct(report["token_hit_rate"]).strip(),
                     _pct(report["ideal_hit_rate"]).strip(), _pct(_bound(report)).strip(),
                     seconds(ttft["p50"]), seconds(ttft["p99"]), _load(report),
                     f"{report['preempted']:,}", f"{report['rejected']:,}"]
                    + ([_pct(report["hit_rate_by_tier"]["host"]).strip()] if host else []))
    return head, rows


def render_table(reports: list[dict[str, Any]]) -> str:
    """One line per run: the comparison table of a sweep or a replay."""
    head, rows = table(reports)
    widths = [max(len(cell) for cell in column) for column in zip(head, *rows)]
    widths[0] = max(widths[0], 34)

    def line(cells: list[str]) -> str:
        return "  ".join([cells[0].ljust(widths[0])]
                        + [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:])])

    header = line(head)
    return "\n".join([header, "-" * len(header), *(line(row) for row in rows)])


def _bound(report: dict[str, Any]) -> float | None:
    bound = report.get("reuse_bound")
    return None if bound is None else float(bound["token_hit_rate"])


def _load(report: dict[str, Any]) -> str:
    """The offered load, marked ``!`` when the run was overloaded."""
    load = report.get("load")
    if load is None or load["offered_load"] is None:
        return "-"
    return f"{load['offered_load']:.2f}" + ("!" if load["overloaded"] else "")
