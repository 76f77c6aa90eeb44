"""``radixkv verify``: run the exactness harness from the command line.

For each chosen component combination (model layers to match) and page size, runs the
workload through a fresh cache and compares every logits row with the uncached run; prints
per request group PASS/FAIL, what each component reused and evicted. Returns 0 when every
run passed, 1 when one failed, 2 on a bad configuration. The options are parsed by
:mod:`radixkv.cli`; this module gets its ``argparse.Namespace``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from ..cache import CacheConfig
from ..errors import OutOfSlotsError, RadixKVError
from .config import DEFAULT_LAYERS, ModelConfig
from .decoder import Decoder
from .harness import VerifyReport, verify
from .reference import Reference
from .report import ProgressBar, group_lines, summary_lines
from .requests import RequestSpec
from .workload import WorkloadConfig, build

COMBOS = {"+".join(combo): combo for combo in DEFAULT_LAYERS}
"""Command-line names of the component combinations: ``full``, ``full+swa``..."""


def _round_up(value: int, page: int) -> int:
    return -(-value // page) * page


def model_config(args: argparse.Namespace, combo: tuple[str, ...]) -> ModelConfig:
    """The model of one run: ``--layers`` or the default stack for ``combo``."""
    layers = tuple(args.layers.split(",")) if args.layers else DEFAULT_LAYERS[combo]
    return ModelConfig(layers=layers, vocab_size=args.vocab, d_model=args.d_model,
                       heads=args.heads, window=args.window, state_size=args.state_size,
                       seed=args.seed)


def cache_config(args: argparse.Namespace, combo: tuple[str, ...], page: int) -> CacheConfig:
    """The cache of one run; pool sizes are rounded up to whole pages."""
    extra: dict[str, Any] = {}
    if "swa" in combo:
        window = args.window if args.cache_window is None else args.cache_window
        extra.update(sliding_window=window, swa_capacity=_round_up(args.swa_capacity, page))
    if "mamba" in combo:
        interval = args.track_interval or max(8, page)
        extra.update(mamba_track_interval=_round_up(interval, page),
                     mamba_states=args.mamba_states)
    return CacheConfig(capacity=_round_up(args.capacity, page), page_size=page,
                       policy=args.policy, components=combo, **extra)


def workload(args: argparse.Namespace) -> list[RequestSpec]:
    return build(WorkloadConfig(
        kind=args.workload, vocab_size=args.vocab, chats=args.chats, turns=args.turns,
        systems=args.systems, system_len=args.system_len, user_len=args.user_len,
        families=args.families, shots=args.shots, shot_len=args.shot_len,
        questions=args.questions, decode=args.decode, seed=args.seed))


def _header(combo: tuple[str, ...], page: int, model: ModelConfig, config: CacheConfig) -> str:
    pools = [f"capacity {config.capacity}"]
    if config.swa_capacity is not None:
        pools.append(f"swa {config.swa_capacity} (window {config.sliding_window})")
    if "mamba" in combo:
        pools.append(f"{config.mamba_states} states every {config.mamba_track_interval}")
    return (f"== {'+'.join(combo)} · page {page} · layers {','.join(model.layers)} "
            f"(window {model.window}) · {', '.join(pools)} · {config.policy}")


def _run_one(args: argparse.Namespace, reference: Reference, config: CacheConfig,
             specs: list[RequestSpec], err: TextIO) -> VerifyReport:
    bar = ProgressBar(err, "  ", enabled=args.progress)
    return verify(reference, config, specs, chunk=args.chunk, max_running=args.max_running,
                  progress=bar)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``radixkv verify`` with parsed options; return the exit code."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    combos = list(COMBOS.values()) if "all" in args.combo else [COMBOS[c] for c in args.combo]
    outcomes: list[bool] = []
    try:
        specs = workload(args)
        for combo in combos:
            model = model_config(args, combo)
            reference = Reference(Decoder(model))
            for page in args.page_size:
                config = cache_config(args, combo, page)
                print(_header(combo, page, model, config), file=out, flush=True)
                report = _run_one(args, reference, config, specs, err)
                lines = group_lines(report.groups, details=True) + summary_lines(report)
                print("\n".join(lines), file=out, flush=True)
                outcomes.append(report.passed)
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
