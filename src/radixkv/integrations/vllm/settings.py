"""The connector's settings, from ``kv_connector_extra_config`` in ``--kv-transfer-config``.

================== ======================================================================
``capacity_tokens`` rows in the connector's buffer, i.e. tokens radixkv can hold (whole
                    pages); default: vLLM's KV cache capacity (blocks x block size)
``page_size``       radixkv's page, the unit of matching; default: vLLM's block size
``eviction_policy`` ``lru`` (default), ``lfu``, ``fifo``, ``mru``, ``filo``, ``priority``,
                    ``slru`` or ``tlru``
================== ======================================================================

A bad value raises :class:`~.support.UnsupportedConfiguration` naming the key. The scheduler
and every worker read the same dict, so they agree on the buffer's size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from radixkv.core.policy import POLICIES
from radixkv.integrations.vllm.support import UnsupportedConfiguration

__all__ = ["ConnectorSettings"]

KEYS = ("capacity_tokens", "page_size", "eviction_policy")


@dataclass(frozen=True)
class ConnectorSettings:
    """What the connector is built with; ``capacity`` is a whole number of pages."""

    capacity: int
    page_size: int
    policy: str = "lru"

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any] | None, block_size: int,
                   kv_capacity: int) -> ConnectorSettings:
        """Read and check ``extra``; ``block_size`` and ``kv_capacity`` (vLLM's, in
        tokens) give the defaults."""
        extra = dict(extra or {})
        unknown = sorted(set(extra) - set(KEYS))
        if unknown:
            raise UnsupportedConfiguration(
                f"kv_connector_extra_config: unknown key(s) {unknown}; known: {list(KEYS)}")
        page = _positive(extra, "page_size", block_size)
        capacity = _positive(extra, "capacity_tokens", kv_capacity)
        if capacity < page:
            raise UnsupportedConfiguration(
                f"kv_connector_extra_config: capacity_tokens={capacity} is less than one "
                f"page of {page}")
        policy = extra.get("eviction_policy", "lru")
        if policy not in POLICIES:
            raise UnsupportedConfiguration(
                f"kv_connector_extra_config: eviction_policy={policy!r}: one of "
                f"{', '.join(sorted(POLICIES))}")
        return cls(capacity=capacity - capacity % page, page_size=page, policy=policy)


def _positive(extra: Mapping[str, Any], key: str, default: int) -> int:
    value = extra.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UnsupportedConfiguration(
            f"kv_connector_extra_config: {key}={value!r} is not an int > 0")
    return value
