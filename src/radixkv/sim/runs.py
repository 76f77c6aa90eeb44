"""What ``radixkv sim`` runs: build the workload and the list of setups, simulate each,
print the summaries and the comparison table, write report.json and the plots."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .cluster import simulate
from .command import parse_params
from .progress import ProgressBar
from .report import records_table, summarize, ttft_values
from .requests import SimRequest
from .setup import Shape, parse_capacity
from .summary import render, render_table
from .trace import TraceConfig, load_trace
from .workloads import make_workload


def load_requests(args: argparse.Namespace) -> tuple[list[SimRequest], str]:
    """The requests to simulate and a name for them."""
    trace = getattr(args, "trace", None)
    if trace is not None:
        config = TraceConfig(limit=args.limit, time_scale=args.time_scale, block=args.block)
        return load_trace(trace, config), Path(trace).name
    params = {"seed": args.seed, **parse_params(args.param)}
    return make_workload(args.workload, **params), args.workload


def shapes(args: argparse.Namespace) -> list[Shape]:
    """Every setup asked for, capacity aside (sweeps: the cross product)."""
    base = Shape(components=tuple(args.components.split("+")), window=args.window,
                 track_interval=args.track_interval, mamba_states=args.mamba_states,
                 preset=args.preset, hints=not args.no_hints,
                 max_batch_tokens=args.max_batch_tokens, max_running=args.max_running,
                 engines=args.engines)
    listed = lambda value: value if isinstance(value, list) else [value]  # noqa: E731
    return [base.with_(policy=policy, page_size=page, router=router)
            for policy in dict.fromkeys(listed(args.policy))
            for page in dict.fromkeys(listed(args.page_size))
            for router in dict.fromkeys(listed(args.router))]


def execute(args: argparse.Namespace) -> int:
    requests, name = load_requests(args)
    capacities = [parse_capacity(text) for text in args.capacity]
    plan = [(shape, capacity) for shape in shapes(args) for capacity in capacities]
    bar = ProgressBar(args.progress)
    reports, ttfts, rows = [], [], {}
    print(f"{name}: {len(requests)} requests, "
          f"{sum(len(r.prompt) for r in requests):,} prompt tokens", flush=True)
    for number, (shape, capacity) in enumerate(plan, 1):
        bar.prefix = f"run {number}/{len(plan)}"
        result = simulate(requests, shape.config(capacity, requests), bar.update)
        bar.close()
        label = _label(shape, capacity, len(plan) > len(capacities))
        report = summarize(result, label)
        reports.append(report)
        ttfts.append((label, ttft_values(result)))
        rows[label] = records_table(result.records)
        print(render(report), flush=True)
    if len(reports) > 1:
        print(render_table(reports))
    _write(args.out, name, reports, rows, ttfts, plots=not args.no_plots)
    return 0


def _label(shape: Shape, capacity: int | None, detailed: bool) -> str:
    size = "inf" if capacity is None else _short(capacity)
    if not detailed:
        return f"{'+'.join(shape.components)} {size}"
    text = f"{shape.policy} p{shape.page_size} {size}"
    return text + (f" {shape.router}" if shape.engines > 1 else "")


def _short(count: int) -> str:
    for unit, size in (("M", 1_000_000), ("K", 1_000)):
        if count >= size and count % (size // 10) == 0:
            return f"{count / size:g}{unit}"
    return str(count)


def _write(out: Path, name: str, reports: list[dict[str, Any]],
           rows: dict[str, Any], ttfts: list[tuple[str, list[float]]], plots: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    document = {"workload": name, "runs": reports, "requests": rows}
    (out / "report.json").write_text(json.dumps(document, indent=1) + "\n")
    written = [out / "report.json"]
    if plots:
        from . import plots as draw

        written.append(draw.ttft_cdf(ttfts, out / "ttft_cdf.png"))
        written.append(draw.memory_over_time(reports[:6], out / "memory.png"))
        written.append(draw.losses(reports, out / "losses.png"))
        if len({r["config"]["capacity"] for r in reports}) > 1:
            written.append(draw.hit_rate_vs_capacity(reports, out / "hit_rate.png", name))
    print("wrote " + ", ".join(str(path) for path in written))
