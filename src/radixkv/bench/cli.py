"""``radixkv bench ops``: the benchmark spec's five operations, alone or against SGLang.

Only argparse is imported at module level, so ``radixkv --help`` stays fast; the benchmark
modules are imported when the command runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cli import output_file
from .opcodes import add_opcodes
from .storage_args import add_storage

COMPONENTS = ("full", "full+swa", "full+mamba")
SPEC_OPERATIONS = ("insert", "match_prefix", "evict", "lock_unlock", "release")
OPERATIONS = (*SPEC_OPERATIONS, "admit_finish")
WORKLOADS = ("reference", "short")
PAGE_HASHES = ("sha256", "xxh3_128")  # radixkv.core.hashing.PAGE_HASHES (not imported here)
TIER_OPERATIONS = ("match_idle", "match_host", "admit_load_back", "evict_demote",
                   "evict_write_back")
"""The operations of ``bench tiers`` (:data:`radixkv.bench.tier_bench.TIER_OPS`), spelled out
so that building the parser imports nothing."""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


_positive.__name__ = "int >= 1"


def add_bench(parser: argparse.ArgumentParser) -> None:
    """The ``bench`` subcommand and its ``ops`` sub-subcommand."""
    sub = parser.add_subparsers(dest="bench_command", metavar="BENCHMARK", title="benchmarks")
    ops = sub.add_parser(
        "ops", help="time insert, match_prefix, evict, lock_unlock, release, admit_finish",
        description="Run the timed operations on fresh caches for each workload: the "
        "reference workload (the five operations of the benchmark spec) and the short-prompt "
        "workload (about 60-token chat turns, radixkv.bench.short: the same five plus "
        "admit_finish of a fully cached prompt); print the inputs' SHA-256 reference "
        "values and structural counts and a table of ops/s, p50 and p99 (medians over "
        "rounds). With --against sglang, SGLang's UnifiedRadixCache with its Python and its "
        "Rust tree core runs in the same run, rounds alternating, from the .venv-peers that "
        "`make bench-peers` builds.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ops.add_argument("--workload", nargs="+", choices=WORKLOADS, default=list(WORKLOADS),
                     help="workloads to run")
    ops.add_argument("--num-seqs", type=_positive, default=5000, metavar="N",
                     help="sequences N of the reference workload (N + 1 are generated)")
    ops.add_argument("--short-prompts", type=_positive, default=20_000, metavar="P",
                     help="prompts of the short-prompt workload")
    ops.add_argument("--rounds", type=_positive, default=5, metavar="N",
                     help="rounds; each runs every tree once per shape, medians reported")
    ops.add_argument("--components", nargs="+", choices=(*COMPONENTS, "all"),
                     default=["all"], help="component sets")
    ops.add_argument("--page-size", nargs="+", type=_positive, default=[1, 16], metavar="N",
                     help="page sizes")
    ops.add_argument("--ops", nargs="+", choices=OPERATIONS, default=None,
                     help="operations to time on every workload (default: the spec's five on "
                     "the reference workload, all six on the short one)")
    ops.add_argument("--verify", action="store_true",
                     help="check each cache's invariants after every warm-up op and at the end")
    ops.add_argument("--json", type=output_file, default=None, metavar="PATH",
                     help="write every round's results, the medians and ratios as JSON")
    ops.add_argument("--against", choices=("sglang",), default=None,
                     help="also run SGLang 0.5.23's python and rust tree cores")
    ops.add_argument("--peer-cores", nargs="+", choices=("rust", "python"),
                     default=["rust", "python"], metavar="CORE",
                     help="with --against sglang, which of SGLang's tree cores run (rust, "
                          "python); leaving python out makes a round about half as long")
    ops.add_argument("--peers-python", default=None, metavar="PATH",
                     help="interpreter of the SGLang venv (default: .venv-peers/bin/python)")
    ops.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    scale = sub.add_parser(
        "scale", help="match/lock/insert cost as the tree grows; heap bytes per cached token",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    scale.add_argument("--sizes", nargs="+", type=_positive,
                       default=[1_000, 10_000, 100_000, 1_000_000], metavar="NODES",
                       help="tree sizes (nodes) at which to time match, lock and insert")
    scale.add_argument("--samples", type=_positive, default=1000, metavar="N",
                       help="timed matches and inserts at each size")
    scale.add_argument("--rounds", type=_positive, default=3, metavar="N",
                       help="rounds in which the trees take turns at match and lock (medians)")
    scale.add_argument("--memory-tokens", type=_positive, default=5_000_000, metavar="N",
                       help="cached tokens of the tree whose heap is measured")
    scale.add_argument("--page-size", nargs="+", type=_positive, default=[1, 16], metavar="N",
                       help="page sizes of the memory measurement")
    scale.add_argument("--json", type=output_file, default=None, metavar="PATH",
                       help="write the results as JSON")
    events = sub.add_parser(
        "events", help="events on / events off cost of admit + finish, per page hash",
        description="Run the short prompts through admit + finish + take_events on FULL "
        "caches with events off and on (each page hash), rounds alternating, and report "
        "p50 and the on/off ratio of each round (radixkv.bench.events_bench); then admit + "
        "finish with events off, on and drained in-process, and on with a live KV event "
        "publisher whose thread encodes and sends (radixkv.bench.events_live).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    events.add_argument("--prompts", type=_positive, default=5000, metavar="P",
                        help="short prompts per pass")
    events.add_argument("--rounds", type=_positive, default=5, metavar="N", help="rounds")
    events.add_argument("--page-size", nargs="+", type=_positive, default=[1, 16],
                        metavar="N", help="page sizes")
    events.add_argument("--page-hash", nargs="+", choices=PAGE_HASHES,
                        default=list(PAGE_HASHES), help="page hashes with events on")
    events.add_argument("--read-fields", action="store_true",
                        help="also read every event taken, in the timed step")
    events.add_argument("--no-publisher", dest="publisher", action="store_false",
                        help="skip the live publisher measurement")
    events.add_argument("--json", type=output_file, default=None, metavar="PATH",
                        help="write every round's results and the summary as JSON")
    _add_tiers(sub)
    add_storage(sub)
    add_opcodes(sub)
    sim = sub.add_parser(
        "sim", help="requests per second of wall time the simulator runs",
        description="Run a chat workload through the simulator (radixkv.sim) with a FULL "
        "cache and report requests per second of wall time (median over rounds).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    from ..sim.command import add_speed

    add_speed(sim)


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise ValueError(text)
    return value


_share.__name__ = "a share in (0, 1)"


def _add_tiers(sub: Any) -> None:
    tiers = sub.add_parser(
        "tiers", help="host-tier operations against the same operations with the tier off",
        description="Time match with host hits, admit with load-back (poll until ready, "
        "finish), eviction with demotion and write-back eviction on caches with a host tier, "
        "and the same operations on the same inputs with the tier off, in the same rounds; "
        "report ops/s, p50 and the tier-on/tier-off ratio. The copy engine moves no bytes "
        "(NumpyCopyEngine without buffers): this measures the cache's bookkeeping.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    tiers.add_argument("--num-seqs", type=_positive, default=2000, metavar="N",
                       help="sequences N of the reference workload")
    tiers.add_argument("--rounds", type=_positive, default=3, metavar="N",
                       help="rounds; medians reported")
    tiers.add_argument("--page-size", nargs="+", type=_positive, default=[16], metavar="N")
    tiers.add_argument("--device-share", type=_share, default=0.25, metavar="F",
                       help="device FULL slots as a share of the tokens the tree holds")
    tiers.add_argument("--evict-batch", type=_positive, default=512, metavar="N",
                       help="tokens per timed eviction")
    tiers.add_argument("--ops", nargs="+", choices=TIER_OPERATIONS,
                       default=list(TIER_OPERATIONS), help="operations to time")
    tiers.add_argument("--verify", action="store_true",
                       help="check invariants after every warm-up op and at the end")
    tiers.add_argument("--json", type=output_file, default=None, metavar="PATH")
    tiers.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


_RUNNERS = {"tiers": (".tier_run", "run_tiers"), "scale": (".scale", "run_scale"),  # lazy
            "events": (".events_bench", "run_events"), "sim": ("..sim.speed", "run_speed"),
            "storage": (".storage_run", "run_storage"), "opcodes": (".opcodes", "run_opcodes")}


def run(args: argparse.Namespace) -> int:
    if args.bench_command in _RUNNERS:
        module, name = _RUNNERS[args.bench_command]
        runner: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(module, __package__), name)
        return runner(args)
    if args.bench_command != "ops":
        print(f"radixkv bench: choose a benchmark (ops, {', '.join(_RUNNERS)})",
              file=sys.stderr)
        return 2
    return _run_ops(args)


def _plan(args: argparse.Namespace) -> tuple[Any, Any]:
    """The run's Plan and the workload sizes it needs, from the options."""
    from .runner import WorkloadSizes
    from .suite import Plan

    components = COMPONENTS if "all" in args.components else tuple(
        dict.fromkeys(args.components))
    workloads = tuple(dict.fromkeys(args.workload))
    shapes = tuple((w, c, p) for w in workloads for c in components
                   for p in dict.fromkeys(args.page_size))
    trees = ("radixkv", *(f"sglang-{core}" for core in dict.fromkeys(args.peer_cores))) \
        if args.against else ("radixkv",)
    defaults = {"reference": SPEC_OPERATIONS, "short": OPERATIONS}
    ops = {w: tuple(dict.fromkeys(args.ops)) if args.ops else defaults[w] for w in workloads}
    sizes = WorkloadSizes(args.num_seqs if "reference" in workloads else None,
                          args.short_prompts if "short" in workloads else None)
    return Plan(shapes, trees, args.rounds, ops), sizes


def _run_ops(args: argparse.Namespace) -> int:
    from . import report
    from .runner import make_workloads, workload_info
    from .suite import PEER_SKIPS, Progress, check_same_inputs, in_process, run_plan

    plan, sizes = _plan(args)
    shapes, trees = plan.shapes, plan.trees
    works = make_workloads(sizes, args.verify)
    infos = {name: workload_info(work) for name, work in works.items()}
    for info in infos.values():
        print(report.render_workload(info), flush=True)
    workers: list[Any] = []
    try:
        if args.against:
            try:
                runners, hellos = _start_workers(args, sizes, trees, workers)
                check_same_inputs(infos, hellos)
            except (OSError, RuntimeError) as exc:
                print(f"radixkv bench: error: {exc}", file=sys.stderr)
                return 1
            for hello in hellos:
                print(_hello_text(hello), flush=True)
            for shape, why in PEER_SKIPS.items():
                if any(s[1:] == shape for s in shapes):
                    print(f"SGLang skipped for {shape[0]} page {shape[1]}: {why}")
        else:
            runners, hellos = {"radixkv": in_process(works)}, []
        try:
            records = run_plan(plan, runners, Progress(plan, enabled=not args.quiet))
        except RuntimeError as exc:  # a worker failed: its stderr tail is in the message
            if not args.against:
                raise
            print(f"radixkv bench: error: {exc}", file=sys.stderr)
            return 1
    finally:
        for worker in workers:
            worker.close()
    for line in _core_lines(records):
        print(line)
    summary = report.summarize(records)
    ratio_rows = report.ratios(summary)
    count_map = report.counts(records)
    for shape in shapes:
        text = report.render_shape(shape, summary, ratio_rows, count_map, trees)
        if text:
            print("\n" + text)
    if args.json is not None:
        _write_json(args, infos, hellos, records, summary, ratio_rows, count_map)
    return 0


def _start_workers(args: argparse.Namespace, sizes: Any, trees: tuple[str, ...],
                   workers: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from .peers.process import Worker, find_peers_python

    peers_python = find_peers_python(args.peers_python)
    runners: dict[str, Any] = {}
    for tree in trees:
        if not args.quiet:
            print(f"starting the {tree} worker ...", file=sys.stderr, flush=True)
        worker = Worker(tree, sizes, args.verify, peers_python)
        workers.append(worker)
        runners[tree] = worker.run
    return runners, [w.hello for w in workers]


def _core_lines(records: list[dict[str, Any]]) -> list[str]:
    """The SGLang tree core each worker's caches really used (SGLang falls back to its
    Python core silently when the Rust one cannot load, so this is read off every cache)."""
    cores: dict[str, set[str]] = {}
    for r in records:
        if "core_class" in r:
            cores.setdefault(r["tree"], set()).add(f"{r['backend_selected']} core "
                                                   f"({r['core_class']})")
    lines = []
    for tree, seen in sorted(cores.items()):
        lines.append(f"{tree}: every cache used the {' / '.join(sorted(seen))}")
        if tree == "sglang-rust" and any("Rust" not in s for s in seen):
            lines.append("  WARNING: the Rust tree core was NOT used for every cache")
    return lines


def _hello_text(hello: dict[str, Any]) -> str:
    text = f"{hello['tree']}: Python {hello['python']} ({hello['executable']})"
    if "sglang" in hello:
        text += (f", SGLang {hello['sglang']}, torch {hello['torch']} "
                 f"({hello['torch_threads']} thread), SGLANG_USE_CPU_ENGINE=1, "
                 f"SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND={hello['backend_requested']}")
        if hello["stand_ins"]:
            text += ("\n  import-time stand-ins (CUDA-only, unused by the tree, raise if "
                     f"called): {', '.join(hello['stand_ins'])}")
    return text


def _write_json(args: argparse.Namespace, infos: dict[str, Any], hellos: list[dict[str, Any]],
                records: list[dict[str, Any]], summary: list[dict[str, Any]],
                ratio_rows: list[dict[str, Any]], count_map: dict[Any, Any]) -> None:
    document = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "python": platform.python_version()},
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "workloads": infos, "workers": hellos, "results": records, "summary": summary,
        "ratios": ratio_rows,
        "counts": [{"workload": w, "components": c, "page_size": p, "tree": t, **v}
                   for (w, c, p, t), v in count_map.items()],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=1) + "\n")
    print(f"\nwrote {args.json}")
