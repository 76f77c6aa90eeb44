"""The command line of ``radixkv bench storage``: the store (files, a Redis, a Mooncake
store, given or started here), the workload, the table and the JSON."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from ..storage import StorageBackend
from .storage_bench import EngineRun, StorageBenchConfig, run_pair
from .workload import WorkloadConfig, sequences

Opener = Callable[[], StorageBackend]


def prompts(args: argparse.Namespace) -> tuple[list[np.ndarray], str]:
    """The workload's prompts, and what they are."""
    if args.trace is not None:
        from ..sim.trace import TraceConfig, load_trace

        requests = load_trace(args.trace, TraceConfig(limit=args.limit))
        return [r.prompt for r in requests], f"{args.trace.name}, first {len(requests)}"
    seqs = sequences(WorkloadConfig(num_seqs=args.num_seqs))
    return [np.asarray(s, np.uint32) for s in seqs], f"reference workload, {len(seqs)} seqs"


@contextlib.contextmanager
def store(args: argparse.Namespace) -> Iterator[tuple[Opener, str]]:
    """Opens clients of the chosen store (each engine its own); a store started here is
    stopped, a temporary directory removed, at the end."""
    scratch = Path(tempfile.mkdtemp(prefix="radixkv-bench-storage-"))
    try:
        if args.store == "file":
            yield _file(args, scratch)
        elif args.store == "redis":
            with _redis(args, scratch) as opened:
                yield opened
        else:
            with _mooncake(args, scratch) as opened:
                yield opened
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _file(args: argparse.Namespace, scratch: Path) -> tuple[Opener, str]:
    from ..storage import FileStorage, FileStorageConfig

    root = args.root if args.root is not None else scratch / "pages"
    return (lambda: FileStorage(FileStorageConfig(root=root))), f"FileStorage at {root}"


@contextlib.contextmanager
def _redis(args: argparse.Namespace, scratch: Path) -> Iterator[tuple[Opener, str]]:
    from ..storage import RedisStorage, RedisStorageConfig
    from ..storage.servers import RedisServer

    server = None
    if args.redis == "start":
        server = RedisServer(scratch / "redis").start()
        where: dict[str, Any] = {"unix_socket": server.socket}
    else:
        where = redis_address(args.redis)
    prefix = f"bench{uuid.uuid4().hex[:8]}"  # this run's pages only
    try:
        yield (lambda: RedisStorage(RedisStorageConfig(prefix=prefix, **where)),
               f"Redis at {where} ({'started here' if server else 'given'})")
    finally:
        if server is not None:
            server.stop()


def redis_address(text: str) -> dict[str, Any]:
    """``RedisStorageConfig`` settings from a URL or a socket path."""
    if "://" not in text:
        return {"unix_socket": text}
    url = urlsplit(text)
    if url.scheme == "unix":
        return {"unix_socket": url.path}
    if url.scheme != "redis":
        raise ValueError(f"not a Redis address: {text!r}")
    db = url.path.strip("/")
    return {"host": url.hostname or "127.0.0.1", "port": url.port or 6379,
            "db": int(db) if db else 0, "password": url.password}


@contextlib.contextmanager
def _mooncake(args: argparse.Namespace, scratch: Path) -> Iterator[tuple[Opener, str]]:
    os.environ.setdefault("GLOG_minloglevel", "3")  # the client logs every miss
    from ..storage import MooncakeStorage, MooncakeStorageConfig
    from ..storage.servers import MooncakeCluster

    cluster = None
    if args.mooncake_master is None:
        os.environ.setdefault("MC_TCP_BIND_ADDRESS", "127.0.0.1")
        cluster = MooncakeCluster(scratch / "mooncake", segment=args.mooncake_segment,
                                  lease_ms=1000).start()
        master, metadata = cluster.master_address, cluster.metadata_server
    else:
        master, metadata = args.mooncake_master, args.mooncake_metadata
    try:
        yield (lambda: MooncakeStorage(MooncakeStorageConfig(
            master_address=master, metadata_server=metadata)),
            f"Mooncake at {master} ({'started here' if cluster else 'given'})")
    finally:
        if cluster is not None:
            cluster.stop()


def render(runs: list[EngineRun], device: int, host: int, what: str, where: str) -> str:
    lines = [f"\n== {what}; {where}; device {device:,} slots, host {host:,} ==",
             f"{'engine':<20} {'requests':>8} {'prompt':>11} {'hit':>11} {'from L3':>11} "
             f"{'computed':>11} {'hit rate':>8} {'wall s':>7} {'L3 read s':>9} "
             f"{'read MB':>8} {'L3 write s':>10} {'written MB':>10}"]
    for r in runs:
        s = r.storage
        lines.append(
            f"{r.name:<20} {r.requests:>8} {r.prompt_tokens:>11,} {r.hit_tokens:>11,} "
            f"{s.get('restored_tokens', 0):>11,} {r.computed_tokens:>11,} "
            f"{100 * r.hit_rate:>7.1f}% {r.wall_s:>7.2f} {s.get('read_s', 0.0):>9.3f} "
            f"{s.get('read_bytes', 0) / 1e6:>8.1f} {s.get('write_s', 0.0):>10.3f} "
            f"{s.get('written_bytes', 0) / 1e6:>10.1f}")
    second, control = runs[1], runs[2]
    restored = second.storage.get("restored_tokens", 0)
    lines.append(f"engine 2: {restored:,} of {second.prompt_tokens:,} prompt tokens restored "
                 f"from L3; hit rate {100 * second.hit_rate:.1f}% with L3, "
                 f"{100 * control.hit_rate:.1f}% without; computed {second.computed_tokens:,}"
                 f" tokens instead of {control.computed_tokens:,}")
    return "\n".join(lines)


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def run_storage(args: argparse.Namespace) -> int:
    """``radixkv bench storage``: run, print the table, optionally write JSON."""
    config = StorageBenchConfig(
        page_size=args.page_size, row_floats=args.row_floats, device_share=args.device_share,
        host_share=args.host_share, wait_policy=args.wait_policy, verify=args.verify,
        progress_every=args.progress_every)
    config = replace(config, model=f"{config.model}-{uuid.uuid4().hex[:8]}")
    served, what = prompts(args)
    first, second = (served, served) if args.second == "same" else (
        served[: len(served) // 2], served[len(served) // 2 :])
    previous = signal.signal(signal.SIGTERM, _terminated)  # so servers started here stop
    try:
        with store(args) as (opener, where):
            print(f"bench storage: {what}; {where}", file=sys.stderr, flush=True)
            runs, device, host = run_pair(config, first, second, opener)
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(render(runs, device, host, what, where))
    if args.json is not None:
        document = {
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "cpus": os.cpu_count()},
            "options": {k: (str(v) if isinstance(v, Path) else v)
                        for k, v in vars(args).items()},
            "config": asdict(config), "workload": what, "store": where,
            "device_slots": device, "host_slots": host,
            "runs": [{**asdict(r), "computed_tokens": r.computed_tokens,
                      "hit_rate": r.hit_rate} for r in runs],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=1) + "\n")
        print(f"\nwrote {args.json}")
    return 0
