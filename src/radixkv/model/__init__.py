"""A tiny reference hybrid model and engine that prove prefix reuse is exact.

:class:`Decoder` is a float64 numpy decoder (full attention, sliding-window attention and
diagonal SSM layers) whose KV and recurrent states live in pools indexed by the slot ids a
:class:`~radixkv.PrefixCache` hands out; :class:`Engine` runs requests through the cache
like a scheduler; :func:`verify` checks that every logit of a cached run equals, bit for
bit, the uncached run of the same prompt. See :mod:`radixkv.model.numerics` for why it can.
"""

from .config import DEFAULT_LAYERS, LAYER_KINDS, ModelConfig
from .decoder import Decoder, TokenSlots
from .engine import Engine, EngineStats
from .harness import GroupVerdict, Mismatch, VerifyReport, compare, verify
from .memory import Memory, PoolSizes
from .reference import Generation, Reference, generate
from .requests import RequestRecord, RequestSpec
from .workload import WORKLOADS, WorkloadConfig, build

__all__ = [
    "DEFAULT_LAYERS",
    "LAYER_KINDS",
    "WORKLOADS",
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
    "compare",
    "generate",
    "verify",
]
