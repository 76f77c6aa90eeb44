"""The ``radixkv`` command line.

``radixkv demo`` runs :func:`radixkv.demo.main`; ``radixkv verify`` runs the exactness
harness of the reference model (:mod:`radixkv.model.command`); ``radixkv bench ops`` runs the
benchmark (:mod:`radixkv.bench.cli`); ``radixkv sim`` the simulator
(:mod:`radixkv.sim.command`). Subcommand modules are
imported only when their subcommand runs, so ``radixkv --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

__all__ = ["main", "output_file", "parse_verify"]

_EXIT_USAGE = 2
_EXIT_INTERRUPTED = 130  # as a shell reports a command stopped by SIGINT


class _UsageError(Exception):
    """Raised instead of argparse's own ``sys.exit`` so :func:`main` can return a code."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _build_parser() -> _Parser:
    parser = _Parser(
        prog="radixkv",
        description="radixkv: a radix-tree prefix cache for LLM serving.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    commands.add_parser(
        "demo", help="run the exactness harness on a built-in default (same as `verify`)")
    _add_verify(commands.add_parser(
        "verify",
        help="check that cached runs of a reference hybrid model are bitwise exact",
        description="Run a workload through the prefix cache with a tiny float64 reference "
        "model (full, sliding-window and chunked local attention, SSM layers) and check that "
        "every logits row equals, bit for bit, the run without caching. Exit code 1 when a "
        "request group differs.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    ))
    _add_bench(commands.add_parser(
        "bench", help="benchmarks: `radixkv bench ops` (optionally against SGLang)",
        description="Benchmarks of the prefix cache."))
    _add_sim(commands.add_parser(
        "sim", help="simulate hit rate, memory and TTFT of a cache setup on a workload",
        description="Drive the real prefix cache with a workload or a trace through "
        "simulated engines with a cost model (docs/simulator.md)."))
    return parser


def _add_sim(parser: argparse.ArgumentParser) -> None:
    from .sim.command import add_sim

    add_sim(parser)


def _run_sim(args: argparse.Namespace) -> int:
    command = importlib.import_module("radixkv.sim.command")
    code: int = command.run(args)
    return code


def _add_bench(parser: argparse.ArgumentParser) -> None:
    from .bench.cli import add_bench

    add_bench(parser)


def _run_bench(args: argparse.Namespace) -> int:
    bench = importlib.import_module("radixkv.bench.cli")
    code: int = bench.run(args)
    return code


def _combos() -> list[str]:
    """The combinations ``verify`` runs: those the reference model has layer kinds for."""
    from .model.model_config import combinations

    return ["+".join(combo) for combo in combinations()]


def _add_verify(parser: argparse.ArgumentParser) -> None:
    runs = parser.add_argument_group("runs")
    combos = _combos()
    runs.add_argument("--combo", nargs="+", choices=[*combos, "all"], default=["all"],
                      metavar="COMBO", help="cache component combinations, from "
                      f"{', '.join(combos)} or all (the model layers follow)")
    runs.add_argument("--page-size", nargs="+", type=_at_least(1), default=[1, 16], metavar="N",
                      help="page sizes to run")
    runs.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                      help="draw a progress bar on stderr (none: only when it is a terminal)")
    work = parser.add_argument_group("workload")
    work.add_argument("--workload", choices=("chat", "fewshot", "mixed"), default="mixed")
    _add_ints(work, _WORKLOAD_INTS)
    model = parser.add_argument_group("model")
    model.add_argument("--layers", default=None, metavar="KINDS",
                       help="comma-separated layer kinds from full,swa,chunked,ssm (none: a "
                       "stack matching each combination)")
    _add_ints(model, _MODEL_INTS)
    cache = parser.add_argument_group("cache and engine")
    _add_ints(cache, _CACHE_INTS)
    cache.add_argument("--policy", default="lru", help="eviction policy")
    _add_host(parser.add_argument_group("host tier (off unless --host-capacity is given)"))
    _add_storage(parser.add_argument_group(
        "storage tier, L3 (off unless --storage-dir is given; needs --host-capacity)"))


_WRITE_POLICIES = ("write_through", "write_through_selective", "write_back")
_WAIT_POLICIES = ("best_effort", "wait_complete", "timeout")


def _add_host(host: argparse._ArgumentGroup) -> None:
    host.add_argument("--host-capacity", type=_at_least(1), default=None, metavar="N",
                      help="host KV slots of each per-token component (rounded up to whole "
                      "pages); turns the host tier on")
    host.add_argument("--host-states", type=_at_least(0), default=None, metavar="N",
                      help="host MAMBA states (none: 8 x --mamba-states)")
    host.add_argument("--write-policy", choices=_WRITE_POLICIES, default="write_through",
                      help="when the host tier backs a prefix up")
    host.add_argument("--copy-delay", type=_at_least(0), default=0, metavar="N",
                      help="polls before a copy lands (with --copy-seed: a random delay up "
                      "to N per batch, out of order)")
    host.add_argument("--copy-seed", type=_at_least(0), default=None, metavar="N",
                      help="seed of the copy delays and failures")
    host.add_argument("--copy-failures", type=_share, default=0.0, metavar="F",
                      help="share of copy batches that fail (in [0, 1])")


def _add_storage(storage: argparse._ArgumentGroup) -> None:
    storage.add_argument("--storage-dir", default=None, metavar="PATH",
                         help="a FileStorage directory the cache writes its pages to and "
                         "restores prefixes from (engines sharing it share pages)")
    storage.add_argument("--wait-policy", choices=_WAIT_POLICIES, default="wait_complete",
                         help="how long admission waits for an L3 prefetch")
    storage.add_argument("--prefetch-threshold", type=_at_least(0), default=32, metavar="N",
                         help="tokens L3 must add to device and host before it is read")


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(text)
    return value


_share.__name__ = "share in [0, 1]"


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise ValueError(text)
        return value

    parse.__name__ = f"int >= {minimum}"  # argparse names the type in its error message
    return parse


def output_file(text: str) -> Path:
    """argparse type of an option naming a file to write (``--json``): checked when the
    options are parsed, so that a long run does not end in a failed write. The file may not
    be a directory, and its nearest existing ancestor must be a directory this process may
    write in (missing directories are made when the file is written)."""
    path = Path(text)
    problem = _unwritable(path)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return path


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written as a file (see :func:`output_file`), or ``None``."""
    if path.is_dir():
        return f"{str(path)!r} is a directory, not a file"
    ancestor = path.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"cannot write {str(path)!r}: {str(ancestor)!r} is not a directory"
    if not os.access(ancestor, os.W_OK):
        return f"cannot write {str(path)!r}: no permission to write in {str(ancestor)!r}"
    try:  # permission bits do not tell a read-only or virtual file system (/proc, /sys)
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as exc:
        return f"cannot write {str(path)!r}: {str(ancestor)!r} takes no new files " \
               f"({exc.strerror or exc})"
    return None


def _add_ints(
    group: argparse._ArgumentGroup, options: tuple[tuple[str, int | None, str], ...]
) -> None:
    """Integer options (>= 1, or >= 0 for seed and track-interval)."""
    for name, default, text in options:
        minimum = 0 if name in ("seed", "track-interval") else 1
        group.add_argument(f"--{name}", type=_at_least(minimum), default=default,
                           metavar="N", help=text)


_WORKLOAD_INTS: tuple[tuple[str, int | None, str], ...] = (
    ("chats", 8, "multi-turn chats"), ("turns", 4, "turns per chat"),
    ("systems", 2, "shared system prompts"), ("system-len", 48, "mean system prompt length"),
    ("user-len", 12, "mean user message / question length"),
    ("families", 3, "few-shot families (branching example lists)"),
    ("shots", 4, "examples per few-shot prompt"), ("shot-len", 12, "mean example length"),
    ("questions", 3, "questions per few-shot family (the first is asked twice)"),
    ("decode", 6, "tokens decoded greedily per request"), ("seed", 0, "workload and model seed"),
)
_MODEL_INTS: tuple[tuple[str, int | None, str], ...] = (
    ("vocab", 64, "vocabulary size"), ("d-model", 16, "hidden size"),
    ("heads", 2, "attention heads"), ("window", 20, "sliding window W of swa layers"),
    ("attention-chunk", 32, "chunk C of chunked local attention layers (a multiple of the "
     "page sizes)"),
    ("state-size", 8, "recurrent state channels of ssm layers"),
)
_CACHE_INTS: tuple[tuple[str, int | None, str], ...] = (
    ("capacity", 384, "FULL KV slots (rounded up to whole pages)"),
    ("swa-capacity", 256, "SWA KV slots"),
    ("chunked-capacity", 256, "chunked local attention KV slots"),
    ("mamba-states", 32, "MAMBA state slots"),
    ("track-interval", 0, "MAMBA checkpoint interval (0: max(8, page size))"),
    ("cache-window", None, "the cache's sliding window (none: --window; a smaller one "
     "breaks exactness, to see a FAIL)"),
    ("cache-chunk", None, "the cache's local-attention chunk (none: --attention-chunk; "
     "another one breaks exactness)"),
    ("chunk", 20, "prefill chunk size"), ("max-running", 3, "requests running interleaved"),
)


def _run_verify(args: argparse.Namespace) -> int:
    command = importlib.import_module("radixkv.model.command")
    code: int = command.run(args)
    return code


def _run_demo() -> int:
    demo = importlib.import_module("radixkv.demo")
    code: int = demo.main()
    return code


def parse_verify(argv: list[str]) -> argparse.Namespace:
    """The options of ``radixkv verify ARGV...`` as :mod:`radixkv.model.command` gets them
    (defaults filled in). Raises ``ValueError`` on a bad option."""
    try:
        return _build_parser().parse_args(["verify", *argv])
    except _UsageError as exc:
        raise ValueError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (``sys.argv[1:]`` when ``None``); return the exit code.

    No subcommand, an unknown one or a bad option prints the help to stderr and returns 2.
    ``--help`` prints the help to stdout and returns 0. Ctrl-C during a command prints one
    line to stderr and returns 130. Never calls ``sys.exit`` itself.
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        print(f"radixkv: error: {exc}", file=sys.stderr)
        parser.print_help(sys.stderr)
        return _EXIT_USAGE
    except SystemExit as exc:  # --help: argparse printed the help and asked to exit
        return exc.code if isinstance(exc.code, int) else 0

    try:
        return _dispatch(parser, args)
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback (worker processes stop too)
        print(f"\nradixkv {args.command}: interrupted", file=sys.stderr)
        return _EXIT_INTERRUPTED


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "demo":
        return _run_demo()
    if args.command == "verify":
        return _run_verify(args)
    if args.command == "bench":
        return _run_bench(args)
    if args.command == "sim":
        return _run_sim(args)
    parser.print_help(sys.stderr)
    return _EXIT_USAGE
