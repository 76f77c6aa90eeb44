"""The options of ``radixkv bench storage`` (argparse only: ``radixkv --help`` stays fast;
the benchmark is in :mod:`radixkv.bench.storage_bench` and :mod:`radixkv.bench.storage_run`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..cli import output_file

STORES = ("file", "redis", "mooncake")
SECOND = ("same", "rest")
"""What engine 2 serves: engine 1's requests again, or the rest of the workload."""


def add_storage(sub: Any) -> None:
    """The ``bench storage`` subcommand and its options."""
    p = sub.add_parser(
        "storage", help="what a second engine gains from a shared storage tier (L3)",
        description="Engine 1 serves a workload with L3 on; engine 2 (a fresh cache on the "
        "same store) and a control engine without L3 then serve the same requests (or the "
        "rest of the workload); reports engine 2's tokens restored from L3 and computed, "
        "its hit rate with and without L3, and the store's seconds and bytes.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--store", choices=STORES, default="file")
    p.add_argument("--root", type=Path, default=None,
                   help="FileStorage directory (default: a temporary one, removed after)")
    p.add_argument("--redis", default="start", metavar="URL",
                   help="redis://HOST:PORT[/DB], unix:///PATH or a socket path; 'start' "
                   "runs a redis-server on a unix socket for the run")
    p.add_argument("--mooncake-master", default=None, metavar="HOST:PORT",
                   help="a running mooncake_master (default: start one, with a segment)")
    p.add_argument("--mooncake-metadata", default=None, metavar="URL",
                   help="its metadata server (with --mooncake-master)")
    p.add_argument("--mooncake-segment", default="1 GB",
                   help="memory of the segment a started cluster holds")
    p.add_argument("--num-seqs", type=int, default=1000, metavar="N",
                   help="sequences of the reference workload")
    p.add_argument("--trace", type=Path, default=None,
                   help="a Mooncake hash_ids trace (JSONL) instead of the reference workload")
    p.add_argument("--limit", type=int, default=200, help="requests read from --trace")
    p.add_argument("--second", choices=SECOND, default="same",
                   help="engine 2 serves engine 1's requests again, or the rest")
    p.add_argument("--page-size", type=int, default=16)
    p.add_argument("--row-floats", type=int, default=256, help="float32 values per token")
    p.add_argument("--device-share", type=float, default=0.25,
                   help="device slots as a share of the tokens a tree of the prompts holds")
    p.add_argument("--host-share", type=float, default=0.5,
                   help="host slots as a share of the same")
    p.add_argument("--wait-policy", default="wait_complete",
                   choices=("best_effort", "wait_complete", "timeout"))
    p.add_argument("--progress-every", type=int, default=100, metavar="N",
                   help="a progress line on stderr every N requests (0: none)")
    p.add_argument("--verify", action="store_true",
                   help="compare every cached prefix's rows, audit after every request")
    p.add_argument("--json", type=output_file, default=None, metavar="PATH")
