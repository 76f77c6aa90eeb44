"""The report of a simulation as plain data (JSON-ready): hit rates, where hits were lost,
latency percentiles, memory over time, evictions, and the gap to an unbounded cache."""

from __future__ import annotations

from itertools import pairwise
from types import EllipsisType
from typing import Any

import numpy as np

from .cluster import SimResult
from .jobs import component_names
from .load import load_report, percentiles
from .records import REASONS, RequestRecord
from .units import tokens

HIT_BINS = (0, 1, 256, 1024, 4096, 16384, 65536)
MAX_SAMPLES = 400


def summarize(result: SimResult, label: str | None = None,
              capacity: int | EllipsisType | None = ...) -> dict[str, Any]:
    """Everything a person asks of one run; pure. ``capacity``: the FULL capacity the run
    was asked for, when that is not the cache's own (``None``: unbounded, for which the
    cache got a slot for every token of the workload; or tokens the cache rounded up to
    whole pages); the report's ``config.capacity`` shows it, ``config.capacity_tokens``
    the cache's slots."""
    asked = result.config.engine.cache.capacity if capacity is ... else capacity
    records = result.records
    served = [r for r in records if not r.rejected]
    prompt = sum(r.prompt_len for r in served)
    hits = sum(r.hit for r in served)
    host_hits = sum(r.host_hit for r in served)
    recomputed = sum(r.recomputed for r in served)
    with_host = result.config.engine.cache.host is not None
    losses = {name: sum(r.losses.get(name, 0) for r in served) for name in REASONS}
    ideal = prompt - sum(losses[name] for name in REASONS[REASONS.index("other_engine"):])
    return {
        "label": label or _label(result, asked),
        "config": _config(result, asked),
        "requests": len(records),
        "rejected": len(records) - len(served),
        "preempted": sum(r.preemptions for r in records),
        "prompt_tokens": prompt,
        "hit_tokens": hits,
        "token_hit_rate": _ratio(hits, prompt),
        "request_hit_rate": _ratio(sum(r.hit > 0 for r in served), len(served)),
        "hit_rate_by_tier": {"device": _ratio(hits - host_hits, prompt),
                             "host": _ratio(host_hits, prompt) if with_host else None,
                             "storage": None},
        "host_hit_tokens": host_hits,
        "hit_rate_by_component": _by_component(result, hits, losses, prompt),
        "ideal_hit_rate": _ratio(ideal, prompt),
        "gap_to_unbounded": _ratio(ideal - hits, prompt),
        "prefill_tokens_computed": prompt - hits + recomputed,
        "prefill_tokens_saved": hits,
        "recomputed_tokens": recomputed,
        "losses": losses,
        "hit_length_histogram": _histogram([r.hit for r in served]),
        "hit_rate_by_turn": _by_turn(served),
        "ttft_s": percentiles([r.ttft for r in served]),
        "latency_s": percentiles([r.latency for r in served]),
        "simulated_seconds": result.sim_seconds,
        "load": load_report(records, [engine.busy_seconds for engine in result.engines]),
        "wall_seconds": result.wall_seconds,
        "requests_per_wall_second": _ratio(len(records), result.wall_seconds),
        "engines": [_engine(engine) for engine in result.engines],
    }


def ttft_values(result: SimResult) -> list[float]:
    return sorted(t for t in (r.ttft for r in result.records) if t is not None)


def _label(result: SimResult, capacity: int | None) -> str:
    cache = result.config.engine.cache
    host = "" if cache.host is None else f" + host {tokens(cache.host.capacity)}"
    return f"{'+'.join(component_names(cache))} {tokens(capacity)} {cache.policy}{host}"


def _config(result: SimResult, capacity: int | None) -> dict[str, Any]:
    engine = result.config.engine
    cache = engine.cache
    return {
        "capacity": capacity, "capacity_tokens": cache.capacity,
        "page_size": cache.page_size, "policy": cache.policy,
        "components": list(component_names(cache)), "sliding_window": cache.sliding_window,
        "mamba_track_interval": cache.mamba_track_interval, "hints": engine.hints,
        "cost_model": engine.cost.name, "layers": {
            "full": engine.cost.full_layers, "swa": engine.cost.swa_layers,
            "ssm": engine.cost.ssm_layers},
        "max_batch_tokens": engine.max_batch_tokens, "max_running": engine.max_running,
        "engines": result.config.engines, "router": result.config.router,
        "host_capacity": None if cache.host is None else cache.host.capacity,
        "write_policy": None if cache.host is None else cache.host.policy.value,
        "host_bandwidth": engine.cost.host_bandwidth,
    }


def _engine(engine: Any) -> dict[str, Any]:
    stats = engine.cache.stats()
    names = ["time_s", "held_by_requests", *(f"{kind}_used" for kind in stats.components)]
    if stats.host is not None:
        names += [f"host_{kind}_used" for kind in stats.host.components]
    samples = engine.samples[:: max(1, -(-len(engine.samples) // MAX_SAMPLES))]
    return {
        "steps": engine.steps,
        "preemptions": engine.preemptions,
        "skipped_checkpoints": engine.ops.skipped_checkpoints,
        "cache": {
            "hit_tokens": stats.hit_tokens, "match_tokens": stats.match_tokens,
            "admitted": stats.admitted, "finished": stats.finished, "aborted": stats.aborted,
            "inserted_tokens": stats.inserted_tokens, "evicted_tokens": stats.evicted_tokens,
            "nodes": stats.nodes,
        },
        "evictions": {kind: dict(c.evicted) for kind, c in stats.components.items()},
        "pool_capacity": {kind: c.pool_capacity for kind, c in stats.components.items()},
        "memory": {"columns": names, "samples": [list(s) for s in samples]},
        "host": _host(engine, stats.host),
    }


def _host(engine: Any, host: Any) -> dict[str, Any] | None:
    """The host tier's counters and the copy streams' time (``None`` without a tier)."""
    if host is None:
        return None
    copies = engine.copies
    return {
        "write_policy": host.write_policy, "backup_batches": host.backup_batches,
        "load_batches": host.load_batches, "skipped_backups": host.skipped_backups,
        "host_hit_tokens": host.host_hit_tokens, "load_requests": host.load_requests,
        "components": {name: {"cached": c.cached, "pool_capacity": c.pool_capacity,
                              "backed_up": c.backed_up, "loaded": c.loaded,
                              "evicted": dict(c.evicted)}
                       for name, c in host.components.items()},
        "copy_seconds": {d.name.lower(): t for d, t in copies.busy.items()},
        "blocked_seconds": copies.blocked,
    }


def _ratio(part: float, whole: float) -> float:
    return float(part) / whole if whole else 0.0


def _by_component(result: SimResult, hits: int, losses: dict[str, int],
                  prompt: int) -> dict[str, float | None]:
    """What each component alone would have served: FULL its resident prefixes (known from
    the KV events; ``None`` without them), the lighter ones only what every component
    accepts (the cache reports no more)."""
    components = component_names(result.config.engine.cache)
    known = all(engine.resident is not None for engine in result.engines)
    full = hits + losses["swa_mamba_missing"] if known or len(components) == 1 else None
    rates: dict[str, float | None] = {"full": None if full is None else _ratio(full, prompt)}
    rates.update({kind: _ratio(hits, prompt) for kind in components[1:]})
    return rates


def _by_turn(records: list[RequestRecord]) -> dict[str, float]:
    """Token hit rate of each turn (chats and agent loops; empty otherwise)."""
    turns: dict[int, list[int]] = {}
    for record in records:
        if record.turn is not None:
            sums = turns.setdefault(record.turn, [0, 0])
            sums[0] += record.hit
            sums[1] += record.prompt_len
    return {str(turn): _ratio(hit, total) for turn, (hit, total) in sorted(turns.items())}


def _histogram(hits: list[int]) -> dict[str, int]:
    """Requests per hit length: none, then the ranges between :data:`HIT_BINS`."""
    names = ["0", *(f"{low}-{high - 1}" for low, high in pairwise(HIT_BINS[1:])),
             f"{HIT_BINS[-1]}+"]
    index = np.searchsorted(HIT_BINS[1:], np.asarray(hits, dtype=np.int64), side="right")
    counts = np.bincount(index, minlength=len(names))
    return {name: int(count) for name, count in zip(names, counts)}


def records_table(records: list[RequestRecord]) -> list[dict[str, Any]]:
    """Per-request rows for the JSON file."""
    return [{"rid": r.rid, "engine": r.engine, "arrival": r.arrival, "prompt": r.prompt_len,
             "output": r.output_len, "hit": r.hit, "ttft": r.ttft, "latency": r.latency,
             "queued": r.queued, "host_hit": r.host_hit, "preemptions": r.preemptions,
             "recomputed": None if r.rejected else r.recomputed, "rejected": r.rejected}
            for r in records]
