"""``radixkv sim run | replay | sweep``: simulate a workload or a trace, print summaries,
write a JSON report, PNG pictures and report.html. Only argparse is imported at module
level (``radixkv --help`` stays fast); the simulator is imported when a command runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..cli import _at_least, output_file
from .sizes import MAX_BLOCK, MAX_WORKLOAD_TOKENS, parse_capacity, workload_tokens

COMBOS = ("full", "full+swa", "full+mamba", "full+swa+mamba")
ROUTERS = ("round-robin", "least-loaded", "kv-aware")
WORKLOADS = ("system", "chat", "fewshot", "agent")
WRITE_POLICIES = ("write_through", "write_through_selective", "write_back")
""":data:`radixkv.host.WRITE_POLICIES`, spelled out so that the parser imports nothing."""


_positive = _at_least(1)


def capacity_option(text: str) -> str:
    """argparse type of a capacity (``1M``, ``inf``): checked when the options are parsed,
    kept as text (the runs parse it again)."""
    try:
        parse_capacity(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def split_address(text: str) -> tuple[str, int]:
    """A Ray cluster's address, ``HOST:PORT`` (``[::1]:6379`` for IPv6), as host and port;
    raises ``ValueError`` naming what is wrong."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"a Ray address is HOST:PORT (as `ray start --head` prints it), "
                         f"got {text!r}")
    return host, int(port)


def ray_address(text: str) -> str:
    """argparse type of ``--ray``: checked as the options are parsed, kept as text."""
    try:
        split_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def block_option(text: str) -> int:
    """argparse type of ``--block``: 1 to :data:`~radixkv.sim.sizes.MAX_BLOCK` tokens."""
    value = _positive(text)
    if value > MAX_BLOCK:
        raise argparse.ArgumentTypeError(f"at most {MAX_BLOCK} tokens a hash id, got {value}")
    return value


def add_sim(parser: argparse.ArgumentParser) -> None:
    """The ``sim`` subcommand and its ``run``, ``replay`` and ``sweep`` sub-subcommands."""
    sub = parser.add_subparsers(dest="sim_command", metavar="COMMAND", title="commands")
    fmt = argparse.ArgumentDefaultsHelpFormatter
    run = sub.add_parser("run", help="simulate a generated workload", formatter_class=fmt)
    _workload_options(run)
    _setup_options(run, default_capacity=["1M"])
    replay = sub.add_parser("replay", help="replay a trace (Mooncake hash_ids or token lists)",
                            formatter_class=fmt)
    _trace_options(replay, positional=True)
    _setup_options(replay, default_capacity=["1M", "3M", "10M", "50M", "inf"])
    sweep = sub.add_parser(
        "sweep", help="capacities x policies x page sizes (x routers) on one workload or trace",
        formatter_class=fmt)
    _workload_options(sweep)
    _trace_options(sweep, positional=False)
    _setup_options(sweep, default_capacity=["100K", "300K", "1M", "3M"], sweep=True)


def _workload_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("workload")
    group.add_argument("--workload", choices=WORKLOADS, default="chat",
                       help="generated workload (see docs/simulator.md)")
    group.add_argument("--param", nargs="+", default=[], metavar="KEY=VALUE",
                       help="workload parameters, e.g. sessions=100 turns=8 rate=2")
    group.add_argument("--seed", type=int, default=0, help="workload seed")


def _trace_options(parser: argparse.ArgumentParser, positional: bool) -> None:
    group = parser.add_argument_group("trace")
    if positional:
        group.add_argument("trace", type=Path, help="JSONL trace file")
    else:
        group.add_argument("--trace", type=Path, default=None, help="replay this trace "
                           "instead of generating --workload")
    group.add_argument("--limit", type=_positive, default=None, metavar="N",
                       help="only the first N requests")
    group.add_argument("--time-scale", type=float, default=1.0, metavar="F",
                       help="multiply the trace's timestamps (0.5: twice the rate)")
    group.add_argument("--block", type=block_option, default=512, metavar="N",
                       help="tokens per hash id (Mooncake traces: 512)")


def _setup_options(parser: argparse.ArgumentParser, default_capacity: list[str],
                   sweep: bool = False) -> None:
    many = "+" if sweep else None
    cache = parser.add_argument_group("cache")
    cache.add_argument("--capacity", nargs="+", type=capacity_option,
                       default=default_capacity, metavar="TOKENS",
                       help="FULL KV capacities: 1M, 500K, 2000000 or inf")
    cache.add_argument("--page-size", type=_positive, nargs=many,
                       default=[16] if sweep else 16, metavar="N")
    cache.add_argument("--policy", nargs=many, default=["lru"] if sweep else "lru",
                       help="eviction policy")
    cache.add_argument("--components", choices=COMBOS, nargs="+", default=["full"],
                       help="component sets (several: one run each, compared)")
    cache.add_argument("--window", type=_positive, default=4096, help="SWA window")
    cache.add_argument("--track-interval", type=_positive, default=512,
                       help="MAMBA checkpoint interval (rounded up to pages)")
    cache.add_argument("--mamba-states", type=_positive, default=4096)
    cache.add_argument("--hints", choices=("on", "off", "both"), default="on",
                       help="MAMBA: save states where the cache hints (branch points, prompt "
                       "ends) and every track interval (on), every track interval only "
                       "(off), or run both")
    cache.add_argument("--host-capacity", type=capacity_option, default=None, metavar="TOKENS",
                       help="a host-memory tier of this many tokens (1M, 500K, ...) under every "
                       "run; copies take the preset's host_bandwidth (none: no host tier)")
    cache.add_argument("--write-policy", choices=WRITE_POLICIES, default="write_through",
                       help="when the host tier backs a node up (with --host-capacity)")
    engine = parser.add_argument_group("engine")
    engine.add_argument("--preset", default="8b-h100", help="cost model preset")
    engine.add_argument("--max-batch-tokens", type=_positive, default=8192)
    engine.add_argument("--max-running", type=_positive, default=256)
    engine.add_argument("--engines", type=_positive, default=1)
    engine.add_argument("--router", choices=ROUTERS, nargs=many,
                        default=["round-robin"] if sweep else "round-robin")
    out = parser.add_argument_group("output")
    out.add_argument("--out", type=Path, default=Path("sim-results"),
                     help="folder for report.json, the PNG pictures and report.html")
    out.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    out.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="progress bar on stderr (none: only on a terminal)")
    where = out.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=_positive, default=None, metavar="N",
                       help="runs at once, each in its own process (default: one per CPU this "
                       "process may use; 1: one after another in this process)")
    where.add_argument("--ray", type=ray_address, default=None, metavar="HOST:PORT",
                       help="run each run as a task on the Ray cluster at this address (as "
                       "`ray start --head` prints it; needs radixkv[ray] here and radixkv on "
                       "every node)")


def add_speed(parser: argparse.ArgumentParser) -> None:
    """The options of ``radixkv bench sim`` (run by :mod:`radixkv.sim.speed`)."""
    parser.add_argument("--sessions", type=_positive, default=1000, help="chats")
    parser.add_argument("--turns", type=_positive, default=5, help="turns per chat")
    parser.add_argument("--user-len", type=_positive, default=128, help="tokens per message")
    parser.add_argument("--output-len", type=_positive, default=128, help="tokens per answer")
    parser.add_argument("--capacity", type=capacity_option, default="1M",
                        help="FULL KV capacity (tokens)")
    parser.add_argument("--page-size", type=_positive, default=16)
    parser.add_argument("--rounds", type=_positive, default=3)
    parser.add_argument("--json", type=output_file, default=None, metavar="PATH",
                        help="write the result")


def run(args: argparse.Namespace) -> int:
    if args.sim_command not in ("run", "replay", "sweep"):
        print("radixkv sim: choose a command (run, replay, sweep)", file=sys.stderr)
        return 2
    too_big = _too_big(args)
    if too_big is not None:
        print(f"radixkv sim: error: {too_big}", file=sys.stderr)
        return 2
    from .parallel import RunFailed
    from .runs import execute

    try:
        return execute(args)
    except (ValueError, OSError, RunFailed) as exc:
        print(f"radixkv sim: error: {exc}", file=sys.stderr)
        return 1


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values parse as int, then float, else stay strings."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--param wants KEY=VALUE, got {pair!r}")
        value: Any = text
        for kind in (int, float):
            try:
                value = kind(text)
                break
            except ValueError:
                continue
        params[key.replace("-", "_")] = value
    return params


def _too_big(args: argparse.Namespace) -> str | None:
    """Why the generated workload is past :data:`~radixkv.sim.sizes.MAX_WORKLOAD_TOKENS`
    (checked before it is generated), or ``None`` (bad parameters are left to the run)."""
    if getattr(args, "trace", None) is not None:
        return None
    try:
        tokens = workload_tokens(args.workload, parse_params(args.param))
    except (TypeError, ValueError):
        return None
    if tokens <= MAX_WORKLOAD_TOKENS:
        return None
    return (f"the {args.workload} workload would generate about {tokens:,} tokens, past the "
            f"simulator's limit of {MAX_WORKLOAD_TOKENS:,}: lower its --param sizes")
