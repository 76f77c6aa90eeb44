"""What ``radixkv sim`` runs: build the workload and the list of setups, simulate each,
print the summaries and the comparison table, write report.json and the plots."""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

from ..progress import ProgressBar
from .bound import reuse_bound
from .command import parse_params
from .parallel import PlannedRun, default_jobs, run_plan
from .requests import SimRequest
from .setup import Shape, parse_capacity
from .summary import render, render_bound, render_table
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
    """Every setup asked for, capacity aside (the cross product of what has several
    values)."""
    base = Shape(window=args.window, track_interval=args.track_interval,
                 mamba_states=args.mamba_states, preset=args.preset,
                 max_batch_tokens=args.max_batch_tokens, max_running=args.max_running,
                 engines=args.engines, host_capacity=host_capacity(args.host_capacity),
                 write_policy=args.write_policy)
    out = []
    for combo in dict.fromkeys(args.components):
        components = tuple(combo.split("+"))
        modes = {"on": [True], "off": [False], "both": [True, False]}[args.hints]
        for hints in modes if "mamba" in components else [True]:
            out += [base.with_(components=components, hints=hints, policy=policy,
                               page_size=page, router=router)
                    for policy in dict.fromkeys(_listed(args.policy))
                    for page in dict.fromkeys(_listed(args.page_size))
                    for router in dict.fromkeys(_listed(args.router))]
    return out


def host_capacity(text: str | None) -> int | None:
    """``--host-capacity``: tokens, or ``None`` for no host tier (it must be finite)."""
    if text is None:
        return None
    tokens = parse_capacity(text)
    if tokens is None:
        raise ValueError("the host capacity must be a number of tokens, not unbounded")
    return tokens


def _listed(value: object) -> list[object]:
    """A sweep option's values (a plain option's one value)."""
    return value if isinstance(value, list) else [value]


def label(shape: Shape, capacity: int | None, varying: set[str]) -> str:
    """Components and capacity, plus whatever else differs between the runs."""
    parts = ["+".join(shape.components)]
    if "mamba" in shape.components and not shape.hints:
        parts.append("no hints")
    if "policy" in varying:
        parts.append(shape.policy)
    if "page_size" in varying:
        parts.append(f"p{shape.page_size}")
    if "router" in varying and shape.engines > 1:
        parts.append(shape.router)
    parts.append("inf" if capacity is None else _short(capacity))
    if shape.host_capacity is not None:
        parts.append(f"+ host {_short(shape.host_capacity)}")
    return " ".join(parts)


def _varying(plan: list[Shape]) -> set[str]:
    return {name for name in ("policy", "page_size", "router")
            if len({getattr(shape, name) for shape in plan}) > 1}


def _check_before_running(plan: list[PlannedRun], requests: list[SimRequest],
                          out: Path) -> None:
    """Raise now, not after other runs (or in a worker), for a bad setup or ``--out``."""
    for run in plan:
        run.shape.config(run.capacity, requests)
    out.mkdir(parents=True, exist_ok=True)


def execute(args: argparse.Namespace) -> int:
    requests, name = load_requests(args)
    capacities = [parse_capacity(text) for text in args.capacity]
    setups = shapes(args)
    varying = _varying(setups)
    plan = [PlannedRun(shape, capacity, label(shape, capacity, varying))
            for shape in setups for capacity in capacities]
    _check_before_running(plan, requests, args.out)
    jobs = default_jobs() if args.jobs is None else args.jobs
    reports, ttfts, rows = [], [], {}
    bounds = {page: reuse_bound(requests, page)
              for page in dict.fromkeys(shape.page_size for shape in setups)}
    _print_header(name, requests, bounds)
    started = time.perf_counter()
    for run, output in run_plan(requests, plan, jobs, ProgressBar(args.progress)):
        output.report["reuse_bound"] = bounds[run.shape.page_size]
        reports.append(output.report)
        ttfts.append((run.label, output.ttft))
        rows[run.label] = output.rows
        print(render(output.report), flush=True)
    if len(reports) > 1:
        print(render_table(reports))
        workers = min(jobs, len(plan))
        print(f"{len(plan)} runs in {time.perf_counter() - started:.1f} s of wall time "
              f"({workers} at a time)")
    _write(args.out, {"workload": name, "reuse_bound": list(bounds.values()), "runs": reports,
                      "requests": rows}, ttfts, plots=not args.no_plots)
    return 0


def _print_header(name: str, requests: list[SimRequest], bounds: dict[int, Any]) -> None:
    print(f"{name}: {len(requests)} requests, "
          f"{sum(len(r.prompt) for r in requests):,} prompt tokens", flush=True)
    for bound in bounds.values():
        print(render_bound(bound), flush=True)


def _short(count: int) -> str:
    for unit, size in (("M", 1_000_000), ("K", 1_000)):
        if count >= size and count % (size // 10) == 0:
            return f"{count / size:g}{unit}"
    return str(count)


def _write(out: Path, document: dict[str, Any], ttfts: list[tuple[str, list[float]]],
           plots: bool) -> None:
    """report.json (``document``) and the plots of its runs."""
    name, reports = document["workload"], document["runs"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(document, indent=1) + "\n")
    written = [out / "report.json"]
    if plots and importlib.util.find_spec("matplotlib") is None:
        print("no plots: matplotlib is not installed (pip install 'radixkv[plot]')")
        plots = False
    if plots:
        from . import plots as draw

        written.append(draw.ttft_cdf(ttfts, out / "ttft_cdf.png"))
        written.append(draw.memory_over_time(reports[:6], out / "memory.png"))
        written.append(draw.losses(reports, out / "losses.png"))
        if len({r["config"]["capacity"] for r in reports}) > 1:
            written.append(draw.hit_rate_vs_capacity(reports, out / "hit_rate.png", name))
        if len({tuple(r["config"]["components"]) for r in reports}) > 1:
            written.append(draw.comparison(reports, out / "comparison.png",
                                           f"{name}: layer mixes"))
    print("wrote " + ", ".join(str(path) for path in written))
