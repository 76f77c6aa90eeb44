"""radixkv.sim: what hit rate, memory and time-to-first-token a cache setup gives on a
workload, by driving the real :class:`~radixkv.PrefixCache` with a cost model for the GPU
work. See docs/simulator.md."""

from .cluster import ROUTERS, SimConfig, SimResult, simulate
from .costs import PRESETS, CostModel
from .engine import EngineConfig, SimEngine
from .records import REASONS, RequestRecord
from .requests import SimRequest
from .trace import TraceConfig, load_trace
from .workloads import WORKLOADS, make_workload

__all__ = [
    "PRESETS",
    "REASONS",
    "ROUTERS",
    "WORKLOADS",
    "CostModel",
    "EngineConfig",
    "RequestRecord",
    "SimConfig",
    "SimEngine",
    "SimRequest",
    "SimResult",
    "TraceConfig",
    "load_trace",
    "make_workload",
    "simulate",
]
