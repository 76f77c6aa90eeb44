"""Benchmark worker: one tree under test in its own process, driven over stdin/stdout.

Run as ``python -m radixkv.bench.peers.worker --tree T --num-seqs N [--verify]`` with the
repository's ``src`` on ``PYTHONPATH``: under ``.venv-peers/bin/python`` for the SGLang trees
(``SGLANG_USE_CPU_ENGINE=1`` and ``SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND`` set by the
caller), under the project's interpreter for radixkv. It generates the workload once, prints a
``hello`` JSON line (workload reference values, interpreter, stand-ins, selected tree core),
then for each command line ``{"components": ..., "page_size": ..., "ops": [...]}`` prints one
JSON line per operation and a ``done`` line. Anything else the process prints goes to stderr,
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
from ..runner import bench_shape, make_workload, radixkv_factory, run_ops, workload_info
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


def serve(tree: str, num_seqs: int, verify: bool) -> None:
    out = _protocol_stream()
    info: dict[str, Any] = {"tree": tree, "python": platform.python_version(),
                            "executable": sys.executable, "pid": os.getpid()}
    make: Callable[[BenchShape, int], BenchCache]
    if tree == "radixkv":
        make = _radixkv_make
    else:
        make, extra = _sglang_setup(tree)
        info.update(extra)
    work = make_workload(num_seqs, verify)
    longest = max(map(len, work.seqs))
    info["workload"] = workload_info(work)
    out.write(json.dumps({"type": "hello", **info}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        shape = bench_shape(command["components"], command["page_size"], work)
        built: list[BenchCache] = []

        def factory(shape: BenchShape = shape, built: list[BenchCache] = built) -> BenchCache:
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
    parser.add_argument("--num-seqs", type=int, default=5000)
    parser.add_argument("--verify", action="store_true")
    args = parser.parse_args(argv)
    serve(args.tree, args.num_seqs, args.verify)
    return 0


if __name__ == "__main__":
    sys.exit(main())
