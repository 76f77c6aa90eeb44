"""Prometheus metrics and a periodic log line for a PrefixCache (and its KV publisher).

:class:`CacheCollector` and :class:`MetricsExporter` need the ``metrics`` extra
(``pip install 'radixkv[metrics]'``, prometheus-client); :class:`StatsLogger` does not.
The metric table, the presets and how to read the numbers: ``docs/metrics.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .names import (
    CACHE_METRICS,
    HOST_METRICS,
    PRESETS,
    PUBLISHER_METRICS,
    STORAGE_METRICS,
    MetricSpec,
    Preset,
)
from .samples import cache_samples, host_samples, publisher_samples, storage_samples
from .stats_log import StatsLogger, summary

if TYPE_CHECKING:
    from .collector import CacheCollector
    from .exporter import MetricsExporter

__all__ = [
    "CACHE_METRICS",
    "HOST_METRICS",
    "PRESETS",
    "PUBLISHER_METRICS",
    "STORAGE_METRICS",
    "CacheCollector",
    "MetricSpec",
    "MetricsExporter",
    "Preset",
    "StatsLogger",
    "cache_samples",
    "host_samples",
    "publisher_samples",
    "storage_samples",
    "summary",
]

_NEED_PROMETHEUS = {"CacheCollector": ".collector", "MetricsExporter": ".exporter"}


def __getattr__(name: str) -> Any:
    """Import the prometheus-client parts only when asked for (the extra is optional)."""
    if name not in _NEED_PROMETHEUS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import importlib

        module = importlib.import_module(_NEED_PROMETHEUS[name], __name__)
    except ModuleNotFoundError as exc:  # pragma: no cover - only without the extra
        raise ImportError(f"radixkv.metrics.{name} needs prometheus-client: "
                          "pip install 'radixkv[metrics]'") from exc
    return getattr(module, name)
