"""Times the radix cache's calls inside SGLang's scheduler (``EngineProcess(preload=
["cost_probe"], env={"COST_PROBE_OUT": path})``): the seconds each cache method takes, and
the scheduler steps (``Scheduler.run_batch`` calls), summed per process and written to
``COST_PROBE_OUT`` as JSON after every step. Patches the class of whichever cache the
engine builds (SGLang's ``UnifiedRadixCache`` or radixkv's backend), not its code."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from typing import Any

METHODS = ("match_prefix", "checkpoint", "evict", "evict_for_alloc", "inc_lock_ref",
           "dec_lock_ref", "lock", "unlock", "path_device_indices", "prefix_device_indices",
           "free_kv_row", "evictable_size", "protected_size", "take_events")
_TOTALS: dict[str, list[float]] = {}  # method -> [calls, seconds]; "cache": outermost calls
_DEPTH = [0]  # cache calls in progress: a call made inside another counts in "cache" once


def _timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        _DEPTH[0] += 1
        try:
            return method(*args, **kwargs)
        finally:
            _DEPTH[0] -= 1
            elapsed = time.perf_counter() - start
            for key in (name, "cache") if not _DEPTH[0] else (name,):
                entry = _TOTALS.setdefault(key, [0, 0.0])
                entry[0] += 1
                entry[1] += elapsed
    return timed


def _patch(cls: type) -> None:
    for name in METHODS:
        # only what the class defines or inherits, each timed once (not per subclass)
        if name in vars(cls) and not getattr(vars(cls)[name], "__wrapped__", None):
            setattr(cls, name, _timed(name, vars(cls)[name]))


def _steps(run_batch: Callable[..., Any]) -> Callable[..., Any]:
    out = os.environ.get("COST_PROBE_OUT")

    @functools.wraps(run_batch)
    def counted(*args: Any, **kwargs: Any) -> Any:
        try:
            return run_batch(*args, **kwargs)
        finally:
            entry = _TOTALS.setdefault("steps", [0, 0.0])
            entry[0] += 1
            if out:
                with open(out, "w") as f:
                    json.dump(_TOTALS, f)
    return counted


def _install() -> None:
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.mem_cache import base_prefix_cache, unified_radix_cache

    from radixkv.integrations.sglang import backend

    for cls in (base_prefix_cache.BasePrefixCache, unified_radix_cache.UnifiedRadixCache,
                backend.RadixKVPrefixCache):
        _patch(cls)
    Scheduler.run_batch = _steps(Scheduler.run_batch)


_install()
