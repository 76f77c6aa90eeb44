"""``radixkv verify``: run the exactness harness from the command line.

For each chosen component combination (model layers to match) and page size, runs the
workload through a fresh cache and compares every logits row with the uncached run; prints
per request group PASS/FAIL, what each component reused and evicted. Returns 0 when every
run passed, 1 when one failed, 2 on a bad configuration. With ``--host-capacity``, the cache
has a host tier the engine's real KV is copied through (``--write-policy``, ``--copy-delay``,
``--copy-seed``, ``--copy-failures``), and each run also prints how many reused tokens came
from device and from host memory. The options are parsed by
:mod:`radixkv.cli`; this module gets its ``argparse.Namespace``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..cache import CacheConfig
from ..errors import OutOfSlotsError, RadixKVError
from ..host import NumpyCopyConfig
from ..progress import ProgressBar
from ..storage import FileStorage, FileStorageConfig
from .caches import CacheSizes
from .caches import cache_config as build_cache
from .harness import VerifyReport, verify
from .model_config import DEFAULT_LAYERS, ModelConfig
from .reference import Reference, shared_reference
from .report import group_lines, summary_lines
from .requests import RequestSpec
from .storage import L3Settings
from .workload import WorkloadConfig, build

COMBOS = {"+".join(combo): combo for combo in DEFAULT_LAYERS}
"""Command-line names of the component combinations: ``full``, ``full+swa``... (every one
:func:`radixkv.supported_combinations` lists that the reference model has layers for)."""


def model_config(args: argparse.Namespace, combo: tuple[str, ...]) -> ModelConfig:
    """The model of one run: ``--layers`` or the default stack for ``combo``."""
    layers = tuple(args.layers.split(",")) if args.layers else DEFAULT_LAYERS[combo]
    return ModelConfig(layers=layers, vocab_size=args.vocab, d_model=args.d_model,
                       heads=args.heads, window=args.window, chunk=args.attention_chunk,
                       state_size=args.state_size, seed=args.seed)


def cache_config(args: argparse.Namespace, combo: tuple[str, ...], page: int,
                 model: ModelConfig) -> CacheConfig:
    """The cache of one run; pool sizes are rounded up to whole pages."""
    sizes = CacheSizes(capacity=args.capacity, swa_capacity=args.swa_capacity,
                       chunked_capacity=args.chunked_capacity, states=args.mamba_states,
                       track_interval=args.track_interval or None, window=args.cache_window,
                       chunk=args.cache_chunk, policy=args.policy,
                       host_capacity=args.host_capacity, host_states=_host_states(args),
                       write_policy=args.write_policy, storage=_storage(args))
    return build_cache(combo, page, model, sizes)


def _storage(args: argparse.Namespace) -> L3Settings | None:
    if args.storage_dir is None:
        return None
    return L3Settings(prefetch_threshold=args.prefetch_threshold, wait_policy=args.wait_policy)


def _store(args: argparse.Namespace, combo: tuple[str, ...], page: int) -> FileStorage | None:
    """The run's FileStorage: a folder per combination and page size under
    ``--storage-dir`` (their layouts differ anyway; the folders keep them apart to read)."""
    if args.storage_dir is None:
        return None
    folder = Path(args.storage_dir) / f"{'+'.join(combo)}-page{page}"
    return FileStorage(FileStorageConfig(root=folder))


def _host_states(args: argparse.Namespace) -> int:
    states: int = args.host_states
    return 8 * args.mamba_states if states is None else states


def copies(args: argparse.Namespace) -> NumpyCopyConfig:
    """How the copy engine of a run with a host tier completes its copies."""
    return NumpyCopyConfig(delay_polls=args.copy_delay, seed=args.copy_seed,
                           failure_rate=args.copy_failures)


def workload(args: argparse.Namespace) -> list[RequestSpec]:
    return build(WorkloadConfig(
        kind=args.workload, vocab_size=args.vocab, chats=args.chats, turns=args.turns,
        systems=args.systems, system_len=args.system_len, user_len=args.user_len,
        families=args.families, shots=args.shots, shot_len=args.shot_len,
        questions=args.questions, decode=args.decode, seed=args.seed))


def _pool(config: CacheConfig, name: str) -> str:
    spec = config.spec(name)
    shape = dict(config.pool_shapes())[name]
    settings = {field: getattr(spec, field) for field in ("window", "chunk", "track_interval")
                if hasattr(spec, field)}
    detail = ", ".join(f"{field.replace('_', ' ')} {value}" for field, value in settings.items())
    return f"{name} {shape.capacity}" + (f" ({detail})" if detail else "")


def _header(combo: tuple[str, ...], page: int, model: ModelConfig, config: CacheConfig) -> str:
    pools = ", ".join(_pool(config, name) for name in config.names)
    return (f"== {'+'.join(combo)} · page {page} · layers {','.join(model.layers)} "
            f"(window {model.window}, chunk {model.chunk}) · {pools} · {config.policy}"
            f"{_host_header(config)}")


def _host_header(config: CacheConfig) -> str:
    host = config.host
    if host is None:
        return ""
    shapes = zip(config.names, config.host_shapes())
    pools = ", ".join(f"{name} {host.capacity_of(name, per_token)}"
                      for name, (_, _, per_token) in shapes)
    return f" · host {pools} ({host.write_policy})"


def _run_one(args: argparse.Namespace, reference: Reference, config: CacheConfig,
             specs: list[RequestSpec], err: TextIO, store: FileStorage | None) -> VerifyReport:
    bar = ProgressBar(args.progress, err, unit="", prefix="  verify")
    return verify(reference, config, specs, chunk=args.chunk, max_running=args.max_running,
                  progress=bar, copies=copies(args), storage=store)


Sink = Callable[[tuple[str, ...], int, CacheConfig, VerifyReport], None]
"""Called with each run's combination, page size, cache configuration and report."""


def _run_combo(args: argparse.Namespace, combo: tuple[str, ...], specs: list[RequestSpec],
               out: TextIO, err: TextIO, sink: Sink | None) -> list[bool]:
    """Run ``combo`` at every page size; print each verdict; whether each passed."""
    model = model_config(args, combo)
    reference = shared_reference(model)
    outcomes = []
    for page in args.page_size:
        config = cache_config(args, combo, page, model)
        print(_header(combo, page, model, config), file=out, flush=True)
        report = _run_one(args, reference, config, specs, err, _store(args, combo, page))
        lines = group_lines(report.groups, details=True) + summary_lines(report)
        print("\n".join(lines), file=out, flush=True)
        outcomes.append(report.passed)
        if sink is not None:
            sink(combo, page, config, report)
    return outcomes


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None,
        sink: Sink | None = None) -> int:
    """Run ``radixkv verify`` with parsed options; return the exit code. ``sink``, if
    given, also gets every run's report."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    combos = list(COMBOS.values()) if "all" in args.combo else [COMBOS[c] for c in args.combo]
    outcomes: list[bool] = []
    try:
        specs = workload(args)
        for combo in combos:
            outcomes += _run_combo(args, combo, specs, out, err, sink)
    except OutOfSlotsError as exc:
        print(f"radixkv verify: error: pools too small for one request: {exc}", file=err)
        return 2
    except (RadixKVError, ValueError) as exc:
        print(f"radixkv verify: error: {exc}", file=err)
        return 2
    failed = outcomes.count(False)
    verdict = "PASS" if not failed else "FAIL"
    print(f"\nverify {verdict}: {len(outcomes) - failed} of {len(outcomes)} runs bitwise "
          f"equal to the uncached model, {len(specs)} requests each", file=out)
    return 1 if failed else 0
