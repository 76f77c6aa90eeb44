"""The connector's settings, from ``kv_connector_extra_config`` in ``--kv-transfer-config``.

====================== ==================================================================
``capacity_tokens``    rows in the connector's buffer, i.e. tokens radixkv holds there
                       (whole pages); default: vLLM's KV cache capacity (blocks x block size)
``page_size``          radixkv's page, the unit of matching; default: vLLM's block size
``eviction_policy``    ``lru`` (default), ``lfu``, ``fifo``, ``mru``, ``filo``, ``priority``,
                       ``slru`` or ``tlru``
``host_tokens``        radixkv's host tier below the buffer, in tokens; 0 or absent: none
``host_write_policy``  ``write_through`` (default), ``write_through_selective``,
                       ``write_back``
``storage``            the shared store (L3), which needs a host tier: ``redis://[:PASSWORD@]
                       HOST[:PORT][/DB]``, ``redis+unix:///PATH[?db=N]`` or ``file:///PATH``
``storage_prefix``     the fleet's key prefix (``radixkv``)
``storage_model``      the model id in page keys (default: vLLM's model name or path)
``storage_wait``       ``timeout`` (default), ``wait_complete`` or ``best_effort``
``storage_timeout_s``  that timeout in seconds (``1.0``)
``prefetch_threshold`` ask L3 only for at least this many tokens (256)
====================== ==================================================================

A bad value raises :class:`~.support.UnsupportedConfiguration` naming the key. The scheduler
and every worker read the same dict, so they agree on the buffer's size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from radixkv.core.policy import POLICIES
from radixkv.integrations.vllm.support import UnsupportedConfiguration

__all__ = ["ConnectorSettings"]

KEYS = ("capacity_tokens", "page_size", "eviction_policy", "host_tokens", "host_write_policy",
        "storage", "storage_prefix", "storage_model", "storage_wait", "storage_timeout_s",
        "prefetch_threshold")
WRITE_POLICIES = ("write_through", "write_through_selective", "write_back")
WAIT_POLICIES = ("timeout", "wait_complete", "best_effort")
SCHEMES = ("redis", "redis+unix", "file")


@dataclass(frozen=True)
class ConnectorSettings:
    """What the connector is built with; ``capacity`` and ``host_tokens`` are whole pages,
    ``host_tokens is None``: no tier below the buffer."""

    capacity: int
    page_size: int
    policy: str = "lru"
    host_tokens: int | None = None
    write_policy: str = "write_through"
    storage: str | None = None
    storage_prefix: str = "radixkv"
    storage_model: str | None = None
    wait_policy: str = "timeout"
    timeout_s: float = 1.0
    prefetch_threshold: int = 256

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
        page = _int(extra, "page_size", block_size, 1)
        capacity = _int(extra, "capacity_tokens", kv_capacity, 1)
        host = _int(extra, "host_tokens", 0, 0)
        for key, tokens in (("capacity_tokens", capacity), ("host_tokens", host)):
            if tokens and tokens < page:
                raise UnsupportedConfiguration(f"kv_connector_extra_config: {key}={tokens} "
                                               f"is less than one page of {page}")
        storage = _storage(extra, host)
        return cls(
            capacity=capacity - capacity % page, page_size=page,
            policy=_choice(extra, "eviction_policy", tuple(sorted(POLICIES)), "lru"),
            host_tokens=(host - host % page) or None,
            write_policy=_choice(extra, "host_write_policy", WRITE_POLICIES),
            storage=storage, storage_prefix=str(extra.get("storage_prefix") or "radixkv"),
            storage_model=extra.get("storage_model") or None,
            wait_policy=_choice(extra, "storage_wait", WAIT_POLICIES),
            timeout_s=_seconds(extra, "storage_timeout_s", 1.0),
            prefetch_threshold=_int(extra, "prefetch_threshold", 256, 0))


def _storage(extra: Mapping[str, Any], host: int) -> str | None:
    url = extra.get("storage") or None
    if url is None:
        return None
    if not isinstance(url, str) or urlsplit(url).scheme not in SCHEMES or \
            not (urlsplit(url).path or urlsplit(url).hostname):
        raise UnsupportedConfiguration(
            f"kv_connector_extra_config: storage={url!r}: redis://, redis+unix:// or "
            "file:// with a path")
    if not host:
        raise UnsupportedConfiguration(
            "kv_connector_extra_config: storage needs a host tier (host_tokens): L3 pages "
            "are read into host memory and written from it")
    return url


def _int(extra: Mapping[str, Any], key: str, default: int, least: int) -> int:
    value = extra.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UnsupportedConfiguration(
            f"kv_connector_extra_config: {key}={value!r} is not an int >= {least}")
    return value


def _seconds(extra: Mapping[str, Any], key: str, default: float) -> float:
    value = extra.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 < value < float("inf"):
        raise UnsupportedConfiguration(
            f"kv_connector_extra_config: {key}={value!r} is not seconds > 0")
    return float(value)


def _choice(extra: Mapping[str, Any], key: str, choices: tuple[str, ...],
            default: str | None = None) -> str:
    value = extra.get(key, default or choices[0])
    if value not in choices:
        raise UnsupportedConfiguration(
            f"kv_connector_extra_config: {key}={value!r}: one of {', '.join(choices)}")
    return str(value)
