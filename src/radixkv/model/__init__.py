"""A tiny reference hybrid model and engine that prove prefix reuse is exact.

:class:`Decoder` is a float64 numpy decoder (full, sliding-window and chunked local
attention, diagonal SSM layers) whose KV and recurrent states live in pools indexed by the
slot ids a :class:`~radixkv.PrefixCache` hands out; :class:`Engine` runs requests through a
cache of any supported component combination like a scheduler; :func:`verify` checks that
every logit of a cached run equals, bit for bit, the uncached run of the same prompt. See
:mod:`radixkv.model.numerics` for why it can.
"""

from .caches import CacheSizes, cache_config
from .decoder import Decoder, TokenSlots
from .engine import Engine, EngineStats
from .harness import GroupVerdict, Mismatch, VerifyReport, compare, verify
from .memory import Memory, PoolSizes
from .model_config import DEFAULT_LAYERS, LAYER_COMPONENTS, LAYER_KINDS, ModelConfig, combinations
from .reference import Generation, Reference, generate, shared_reference
from .requests import RequestRecord, RequestSpec
from .workload import WORKLOADS, WorkloadConfig, build

__all__ = [
    "DEFAULT_LAYERS",
    "LAYER_COMPONENTS",
    "LAYER_KINDS",
    "WORKLOADS",
    "CacheSizes",
    "Decoder",
    "Engine",
    "EngineStats",
    "Generation",
    "GroupVerdict",
    "Memory",
    "Mismatch",
    "ModelConfig",
    "PoolSizes",
    "Reference",
    "RequestRecord",
    "RequestSpec",
    "TokenSlots",
    "VerifyReport",
    "WorkloadConfig",
    "build",
    "cache_config",
    "combinations",
    "compare",
    "generate",
    "shared_reference",
    "verify",
]
