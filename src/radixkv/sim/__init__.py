"""radixkv.sim: what hit rate, memory and time-to-first-token a cache setup gives on a
workload, by driving the real :class:`~radixkv.PrefixCache` with a cost model for the GPU
work. See docs/simulator.md.

The names below are imported on first use, so ``radixkv --help`` (which builds the ``sim``
subcommand's parser from :mod:`radixkv.sim.command`) does not load numpy or the cache.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "simulate": "cluster", "SimConfig": "cluster", "SimResult": "cluster",
    "ROUTERS": "cluster", "CostModel": "costs", "PRESETS": "costs",
    "EngineConfig": "engine", "SimEngine": "engine", "REASONS": "records",
    "RequestRecord": "records", "SimRequest": "requests", "TraceConfig": "trace",
    "load_trace": "trace", "WORKLOADS": "workloads", "make_workload": "workloads",
    "summarize": "report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'radixkv.sim' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
