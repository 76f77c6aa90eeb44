"""``radixkv bench events``: what KV events add to admit + finish, measured in one run.

Each round runs the short prompts (:mod:`radixkv.bench.short`) through ``admit`` then
``finish`` then ``take_events`` (timed together, as a scheduler step would drain the queue)
on fresh FULL caches, one per setting: events off, and events on with each page hash asked
for. Each prompt goes to every cache in turn before the next prompt (which setting goes
first rotates from prompt to prompt), so a burst of machine noise hits all settings alike. Two
passes per cache: **new** (the first pass: each prompt's system prompt is cached, its
question is new, so its pages are hashed and published) and **cached** (the same prompts
again: fully cached, nothing new to publish). Reported: the median over rounds of each
setting's p50, and of each round's ratio of events-on p50 to events-off p50 (ratios of one
round share the machine's state, so they are steadier than the absolute times).

The events the tree queues compute their ids and tokens when first read (see
:mod:`radixkv.core.events`), which a publisher does on its own thread; ``--read-fields``
reads every event in the timed step too, for what a consumer on the scheduler's thread pays.

Then, unless ``--no-publisher`` (or pyzmq is missing), the same prompts with a live
publisher (:mod:`radixkv.bench.events_live`): off, queued and live, p50 and mean.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cache import CacheConfig, PrefixCache
from ..core.hashing import page_hash
from ..errors import ConfigError
from .events_live import render_publisher, run_publisher_rounds, summarize_publisher
from .short import ShortConfig, short_prompts

OFF = "off"
PASSES = ("new", "cached")


def available_hashes(names: list[str]) -> list[str]:
    """The page hashes of ``names`` this installation can run (xxh3_128 needs xxhash)."""
    usable = []
    for name in names:
        try:
            page_hash(name)
        except ConfigError as exc:
            print(f"radixkv bench events: skipping {name}: {exc}", file=sys.stderr)
        else:
            usable.append(name)
    return usable


def _cache(setting: str, page_size: int, capacity: int) -> PrefixCache:
    events = setting != OFF
    return PrefixCache(CacheConfig(capacity=capacity, page_size=page_size, events=events,
                                   page_hash=setting if events else "sha256",
                                   lost_hits=False))


def _step(cache: PrefixCache, read: bool = False) -> Callable[[list[int]], None]:
    admit, finish, take = cache.admit, cache.finish, cache.take_events

    def step(prompt: list[int]) -> None:
        finish(admit(prompt))
        take()

    def step_read(prompt: list[int]) -> None:
        finish(admit(prompt))
        for event in take():  # one field read computes a pending event's every field
            getattr(event, "block_hashes", None)

    return step_read if read else step


def run_interleaved(settings: list[str], page_size: int, prompts: list[list[int]],
                    capacity: int, read: bool = False) -> dict[str, dict[str, float]]:
    """p50 µs of admit + finish + take_events per setting and pass, one fresh cache per
    setting; each prompt is run on every cache in turn before the next prompt, so that the
    machine's noise falls on every setting alike. ``read``: the step also reads every
    event taken (what a consumer on the scheduler's thread pays)."""
    caches = [_cache(setting, page_size, capacity) for setting in settings]
    steps = [_step(cache, read) for cache in caches]
    warmup = min(20, len(prompts) // 10)
    result: dict[str, dict[str, float]] = {setting: {} for setting in settings}
    for name in PASSES:
        items = prompts[warmup:] if name == "new" else prompts
        if name == "new":
            for prompt in prompts[:warmup]:
                for step in steps:
                    step(prompt)
        latencies = _time_interleaved(steps, items)
        for setting, lat in zip(settings, latencies):
            result[setting][name] = statistics.median(lat)
    for cache in caches:
        cache.check_invariants()
    return result


def _time_interleaved(steps: list[Callable[[list[int]], None]], items: list[list[int]]
                      ) -> list[list[float]]:
    """Each item on every step, the step that goes first rotating from item to item (the
    first of a group runs with the warmest interpreter caches)."""
    count = len(steps)
    order = [[(i + shift) % count for i in range(count)] for shift in range(count)]
    latencies: list[list[float]] = [[] for _ in steps]
    now = time.perf_counter
    gc.collect()
    gc.disable()
    try:
        for position, item in enumerate(items):
            for index in order[position % count]:
                begin = now()
                steps[index](item)
                latencies[index].append((now() - begin) * 1e6)
    finally:
        gc.enable()
    return latencies


def run_rounds(prompts: list[list[int]], page_sizes: list[int], hashes: list[str],
               rounds: int, capacity: int, read: bool = False) -> list[dict[str, Any]]:
    """One record per (round, page size, setting, pass)."""
    settings = [OFF, *hashes]
    records: list[dict[str, Any]] = []
    for round_index in range(rounds):
        for page_size in page_sizes:
            p50 = run_interleaved(settings, page_size, prompts, capacity, read)
            records.extend({"round": round_index, "page_size": page_size, "setting": setting,
                            "pass": name, "p50_us": p50[setting][name]}
                           for setting in settings for name in PASSES)
    return records


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (page size, pass, setting): median p50 over rounds and median on/off ratio."""
    by_key = {(r["round"], r["page_size"], r["pass"], r["setting"]): r["p50_us"]
              for r in records}
    groups: dict[tuple[int, str, str], list[tuple[float, float]]] = {}
    for (round_index, page, name, setting), p50 in by_key.items():
        off = by_key[(round_index, page, name, OFF)]
        groups.setdefault((page, name, setting), []).append((p50, p50 / off))
    return [{"page_size": page, "pass": name, "setting": setting,
             "p50_us": statistics.median(p for p, _ in rows),
             "ratio": statistics.median(q for _, q in rows),
             "ratios": [round(q, 3) for _, q in rows]}
            for (page, name, setting), rows in sorted(groups.items())]


def render(summary: list[dict[str, Any]], rounds: int, read: bool = False) -> str:
    """The summary as a table: p50 and ratio per page size, pass and setting."""
    step = "admit + finish + take_events" + (" + a read of each event" if read else "")
    lines = [f"{step}, p50 µs, median of {rounds} round(s); ratio: "
             "events on ÷ events off, median of the rounds' ratios",
             f"{'page':>4} {'pass':<7} {'events':<10} {'p50':>8} {'ratio':>7}  rounds"]
    for row in summary:
        setting = "off" if row["setting"] == OFF else f"on {row['setting']}"
        lines.append(f"{row['page_size']:>4} {row['pass']:<7} {setting:<10} "
                     f"{row['p50_us']:>8.1f} {row['ratio']:>7.2f}  "
                     f"{' '.join(f'{q:.2f}' for q in row['ratios'])}")
    return "\n".join(lines)


def run_events(args: argparse.Namespace) -> int:
    """``radixkv bench events``: every round, the table, and the JSON if asked for."""
    config = ShortConfig(prompts=args.prompts)
    prompts = short_prompts(config)
    hashes = available_hashes(list(dict.fromkeys(args.page_hash)))
    page_sizes = list(dict.fromkeys(args.page_size))
    read = getattr(args, "read_fields", False)
    records = run_rounds(prompts, page_sizes, hashes, args.rounds, config.kv_size, read)
    summary = summarize(records)
    print(render(summary, args.rounds, read))
    document: dict[str, Any] = {"results": records, "summary": summary}
    if getattr(args, "publisher", True) and _publisher_available():
        live = run_publisher_rounds(prompts, page_sizes, args.rounds, config.kv_size)
        live_summary = summarize_publisher(live)
        print("\n" + render_publisher(live_summary, live, args.rounds))
        document["publisher"] = {"results": live, "summary": live_summary}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        options = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
        args.json.write_text(json.dumps({"options": options} | document, indent=1) + "\n")
        print(f"\nwrote {args.json}")
    return 0


def _publisher_available() -> bool:
    try:
        import msgpack  # noqa: F401
        import zmq  # noqa: F401
    except ImportError as exc:
        print(f"radixkv bench events: no live publisher measurement: {exc} (pip install "
              "'radixkv[events]')", file=sys.stderr)
        return False
    return True
