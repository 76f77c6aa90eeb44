"""Benchmark worker: one tree under test in its own process, driven over stdin/stdout.

Run as ``python -m radixkv.bench.peers.worker --tree T [--reference N] [--short P]
[--verify]`` with the repository's ``src`` on ``PYTHONPATH``: under ``.venv-peers/bin/python``
for the SGLang trees (``SGLANG_USE_CPU_ENGINE=1`` and ``SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND``
set by the caller), under the project's interpreter for radixkv. It generates the workloads
named once, prints a ``hello`` JSON line (each workload's reference values under
``workloads``, interpreter, stand-ins, selected tree core), then for each command line
``{"workload": ..., "components": ..., "page_size": ..., "ops": [...]}`` prints one JSON line
per operation and a ``done`` line. Anything else the process prints goes to stderr,
so stdout carries only the protocol.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
from collections.abc import Callable
from typing import IO, Any

from ..adapters import BenchCache, BenchShape
from ..runner import (
    WorkloadSizes,
    bench_shape,
    make_workloads,
    radixkv_factory,
    run_ops,
    workload_info,
)
from . import SGLANG_VERSION, TREES

TORCH_THREADS = 1


def _protocol_stream() -> IO[str]:
    """A private copy of stdout for JSON lines; fd 1 then points at stderr."""
    stream = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def _sglang_setup(tree: str) -> tuple[Callable[[BenchShape, int], BenchCache], dict[str, Any]]:
    backend = tree.removeprefix("sglang-")
    if os.environ.get("SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND") != backend:
        raise SystemExit(f"{tree}: set SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND={backend}")
    if os.environ.get("SGLANG_USE_CPU_ENGINE") != "1":
        raise SystemExit(f"{tree}: set SGLANG_USE_CPU_ENGINE=1")
    from . import stand_ins

    stood_in = stand_ins.install()
    from importlib.metadata import version

    from .sglang_cache import SGLangCache

    # One intra-op thread: on a small machine torch's thread pool makes the allocator's
    # tensor concatenations several times slower and far noisier (measured 3x on 2 cores).
    torch = importlib.import_module("torch")
    torch.set_num_threads(TORCH_THREADS)
    info = {"sglang": version("sglang"), "torch": version("torch"), "stand_ins": stood_in,
            "backend_requested": backend, "torch_threads": torch.get_num_threads()}
    if info["sglang"] != SGLANG_VERSION:
        print(f"warning: SGLang {info['sglang']} is not {SGLANG_VERSION}", file=sys.stderr)
    return (lambda shape, longest: SGLangCache(shape, longest, backend)), info


def _radixkv_make(shape: BenchShape, _longest: int) -> BenchCache:
    return radixkv_factory(shape)()


def _core_info(cache: Any) -> dict[str, Any]:
    parts = getattr(cache, "parts", None)
    if parts is None:
        return {"core": "radixkv"}
    return {"backend_selected": parts.backend, "core_class": parts.core_class}


def serve(tree: str, sizes: WorkloadSizes, verify: bool) -> None:
    out = _protocol_stream()
    info: dict[str, Any] = {"tree": tree, "python": platform.python_version(),
                            "executable": sys.executable, "pid": os.getpid()}
    make: Callable[[BenchShape, int], BenchCache]
    if tree == "radixkv":
        make = _radixkv_make
    else:
        make, extra = _sglang_setup(tree)
        info.update(extra)
    works = make_workloads(sizes, verify)
    info["workloads"] = {name: workload_info(work) for name, work in works.items()}
    out.write(json.dumps({"type": "hello", **info}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        work = works[command.get("workload", "reference")]
        shape = bench_shape(command["components"], command["page_size"], work)
        built: list[BenchCache] = []
        longest = max(map(len, work.seqs))

        def factory(shape: BenchShape = shape, built: list[BenchCache] = built,
                    longest: int = longest) -> BenchCache:
            cache = make(shape, longest)
            built.append(cache)
            return cache

        try:
            for record in run_ops(factory, work, tuple(command["ops"])):
                record.update(_core_info(built[-1]))
                built.clear()
                out.write(json.dumps({"type": "op", **record}) + "\n")
        except Exception as exc:
            out.write(json.dumps({"type": "error", "error": f"{type(exc).__name__}: {exc}"})
                      + "\n")
            raise
        out.write(json.dumps({"type": "done"}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="radixkv.bench.peers.worker")
    parser.add_argument("--tree", choices=TREES, required=True)
    parser.add_argument("--reference", type=int, default=None, metavar="N",
                        help="generate the reference workload with N sequences")
    parser.add_argument("--short", type=int, default=None, metavar="P",
                        help="generate the short-prompt workload with P prompts")
    parser.add_argument("--verify", action="store_true")
    args = parser.parse_args(argv)
    serve(args.tree, WorkloadSizes(args.reference, args.short), args.verify)
    return 0


if __name__ == "__main__":
    sys.exit(main())
