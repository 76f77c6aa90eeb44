"""``radixkv bench opcodes``: interpreter instructions per call of each ``bench ops``
operation, a measure of an operation's Python work that the machine's load cannot move.

On a shared machine single rounds of ``bench ops`` swing by up to 2x; how many bytecode
instructions CPython executes for a call is exact and the same in every run. It counts only
interpreted work: a call into C (numpy, dict and bytes methods, ``array.fromlist``) is the
one instruction that makes it, however long it runs. So the count tells whether a change
added or removed Python work on a hot path; ``bench ops`` still tells what it costs.

Every operation runs on a fresh cache with the setup and inputs of ``bench ops`` (the same
procedures, :data:`radixkv.bench.ops.RUNNERS`); the instructions of the operation's calls
after its first ``skip`` calls (the warm-up) are counted, for ``sample`` calls. ``--baseline``
prints the ratio to a JSON this command wrote for another version of the code. The imports
are absolute and made when the command runs, so this file also runs as a script against a
checkout that predates it: ``PYTHONPATH=OLD/src python src/radixkv/bench/opcodes.py ...``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

REFERENCE_SEQS, SHORT_PROMPTS = 5000, 20_000
"""Sequences of the reference workload and short prompts by default (``bench ops``')."""
OPS = ("insert", "match_prefix", "evict", "lock_unlock", "release", "admit_finish")
METHODS = {"insert": "insert_with_fallback", "match_prefix": "match", "evict": "evict",
           "lock_unlock": "lock_unlock", "release": "release", "admit_finish": "admit_finish"}
"""The bench cache's method each operation times."""
Key = tuple[str, int, str]


class OpcodeTally:
    """Counts the bytecode instructions CPython executes in the calls it makes (a trace
    function with opcode events: every frame below the call, none of the caller's)."""

    def __init__(self) -> None:
        self.opcodes = 0
        self.calls = 0

    def _trace(self, frame: FrameType, event: str, arg: object) -> Callable[..., Any]:
        frame.f_trace_opcodes = True
        if event == "opcode":
            self.opcodes += 1
        return self._trace

    def call(self, function: Callable[[Any], Any], item: Any) -> Any:
        """``function(item)``, counted; the previous trace function is put back after."""
        previous = sys.gettrace()
        sys.settrace(self._trace)
        try:
            return function(item)
        finally:
            sys.settrace(previous)
            self.calls += 1


class CountedCache:
    """A bench cache whose ``method`` calls after the first ``skip`` are counted by
    ``tally``, ``sample`` of them; every other attribute is the wrapped cache's."""

    def __init__(self, inner: Any, method: str, skip: int, sample: int,
                 tally: OpcodeTally) -> None:
        self._inner, self._method, self._tally = inner, getattr(inner, method), tally
        self._name, self._skip, self._stop, self._seen = method, skip, skip + sample, 0

    def __getattr__(self, name: str) -> Any:
        if name != self._name:
            return getattr(self._inner, name)
        return self._counted

    def _counted(self, item: Any) -> Any:
        self._seen += 1
        if self._skip < self._seen <= self._stop:
            return self._tally.call(self._method, item)
        return self._method(item)


def count_op(shape: Any, work: Any, op: str, skip: int, sample: int) -> dict[str, Any]:
    """Instructions per call of ``op`` on a fresh cache of ``shape`` over ``work``."""
    from radixkv.bench.ops import RUNNERS
    from radixkv.bench.runner import radixkv_factory

    tally, factory = OpcodeTally(), radixkv_factory(shape)
    RUNNERS[op](lambda: CountedCache(factory(), METHODS[op], skip, sample, tally), work)
    per_call = tally.opcodes / tally.calls if tally.calls else None
    return {"op": op, "calls": tally.calls, "opcodes": tally.opcodes, "per_call": per_call}


def run_opcodes(args: argparse.Namespace) -> int:
    from radixkv.bench.runner import bench_shape, make_workload

    problem = _bad_option(args)
    if problem is not None:
        print(f"radixkv bench opcodes: error: {problem}", file=sys.stderr)
        return 2

    # an older checkout knows only the reference workload (no ``name``)
    work = make_workload(args.num_seqs or REFERENCE_SEQS) if args.workload == "reference" else \
        make_workload(args.num_seqs or SHORT_PROMPTS, name=args.workload)
    baseline = _load(args.baseline, args.workload) if args.baseline else {}
    results = []
    print(f"{'shape':<18} {'operation':<13} {'calls':>6} {'opcodes/call':>13}"
          + ("  ratio to baseline" if baseline else ""))
    for components in args.components:
        for page in args.page_size:
            shape = bench_shape(components, page, work)
            for op in args.ops:
                row = {"components": components, "page_size": page,
                       **count_op(shape, work, op, args.skip, args.sample)}
                results.append(row)
                print(_line(row, baseline.get((components, page, op))), flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"python": sys.version, "workload": args.workload,
                                         "num_seqs": work.num_seqs,
                                         "skip": args.skip, "sample": args.sample,
                                         "results": results}, indent=1))
    return 0


def _bad_option(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, if anything (checked here, not by argparse types, so
    that this file still runs as a script against an older checkout's ``radixkv.cli``)."""
    least = {"skip": 0, "sample": 1, "num_seqs": 1}
    for name, minimum in least.items():
        value = getattr(args, name)
        if value is not None and value < minimum:
            return f"--{name.replace('_', '-')} must be >= {minimum}, got {value}"
    if min(args.page_size) < 1:
        return f"--page-size must be >= 1, got {min(args.page_size)}"
    if args.json is not None and args.json.parent.exists() and not args.json.parent.is_dir():
        return f"cannot write {str(args.json)!r}: {str(args.json.parent)!r} is not a directory"
    return None


def _line(row: dict[str, Any], base: float | None) -> str:
    shape = f"{row['components']} p{row['page_size']}"
    per_call = row["per_call"]
    text = f"{shape:<18} {row['op']:<13} {row['calls']:>6} " + (
        f"{per_call:>13.1f}" if per_call is not None else f"{'-':>13}")
    if base and per_call is not None:
        text += f"  {per_call / base:.3f}"
    return text


def _load(path: Path, workload: str) -> dict[Key, float]:
    """A baseline JSON's counts; raises :class:`SystemExit` for one of another workload
    (files written before ``--workload`` existed are of the reference workload)."""
    data = json.loads(path.read_text())
    if data.get("workload", "reference") != workload:
        raise SystemExit(f"{path} counts the {data['workload']} workload, not {workload}")
    rows = data["results"]
    return {(r["components"], r["page_size"], r["op"]): r["per_call"] for r in rows
            if r["per_call"] is not None}


def add_opcodes(sub: Any) -> None:
    """The ``bench opcodes`` subcommand."""
    parser = sub.add_parser(
        "opcodes", help="interpreter instructions per call of each bench ops operation",
        description="Count the bytecode instructions CPython executes per call of each "
        "operation of bench ops (same setup and inputs), a measure of the Python work that "
        "the machine's load cannot move; calls into C count as one instruction.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--workload", choices=("reference", "short"), default="reference",
                        help="bench ops' workload whose operations are counted")
    parser.add_argument("--num-seqs", type=int, default=None, metavar="N",
                        help=f"sequences N of the reference workload (default {REFERENCE_SEQS})"
                        f", or short prompts (default {SHORT_PROMPTS})")
    parser.add_argument("--components", nargs="+", default=["full", "full+swa", "full+mamba"],
                        choices=("full", "full+swa", "full+mamba"))
    parser.add_argument("--page-size", nargs="+", type=int, default=[1, 16], metavar="N")
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS[:5]))
    parser.add_argument("--skip", type=int, default=20, metavar="N",
                        help="calls of each operation not counted (warm-up)")
    parser.add_argument("--sample", type=int, default=500, metavar="N",
                        help="calls of each operation counted")
    parser.add_argument("--baseline", type=Path, default=None, metavar="JSON",
                        help="a JSON of this command to print ratios against")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH")


if __name__ == "__main__":  # run against another checkout: see the module docstring
    _parser = argparse.ArgumentParser(prog="opcodes.py")
    add_opcodes(_parser.add_subparsers(dest="command"))
    sys.exit(run_opcodes(_parser.parse_args(["opcodes", *sys.argv[1:]])))
