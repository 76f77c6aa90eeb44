"""What ``radixkv sim`` runs: build the workload and the list of setups, simulate each,
print the summaries and the comparison table, write report.json, the pictures and
report.html (:mod:`radixkv.sim.output`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ..progress import ProgressBar
from .bound import reuse_bound
from .command import parse_params
from .output import Outputs, write
from .parallel import PlannedRun, default_jobs, run_plan
from .requests import SimRequest
from .setup import Shape, parse_capacity
from .summary import render, render_bound, render_table
from .trace import TraceConfig, load_trace
from .units import tokens
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
    parts.append(tokens(capacity))
    if shape.host_capacity is not None:
        parts.append(f"+ host {tokens(shape.host_capacity)}")
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
    heading = _heading(name, requests, bounds)
    print("\n".join(heading), flush=True)
    started = time.perf_counter()
    for run, output in run_plan(requests, plan, jobs, ProgressBar(args.progress), args.ray):
        output.report["reuse_bound"] = bounds[run.shape.page_size]
        reports.append(output.report)
        ttfts.append((run.label, output.ttft))
        rows[run.label] = output.rows
        print(render(output.report), flush=True)
    if len(reports) > 1:
        print(render_table(reports))
        where = f"{min(jobs, len(plan))} at a time" if args.ray is None \
            else f"as tasks on the Ray cluster at {args.ray}"
        print(f"{len(plan)} runs in {time.perf_counter() - started:.1f} s of wall time "
              f"({where})")
    document = {"workload": name, "reuse_bound": list(bounds.values()), "runs": reports,
                "requests": rows}
    written = write(args.out, Outputs(document, ttfts, heading), plots=not args.no_plots)
    print("wrote " + ", ".join(str(path) for path in written))
    return 0


def _heading(name: str, requests: list[SimRequest], bounds: dict[int, Any]) -> list[str]:
    """What the command prints before its runs (and report.html shows first)."""
    return [f"{name}: {len(requests):,} requests, "
            f"{sum(len(r.prompt) for r in requests):,} prompt tokens",
            *(render_bound(bound) for bound in bounds.values())]
