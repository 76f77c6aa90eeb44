"""CacheCollector: a prometheus-client collector that reads a cache's (and optionally a KV
event publisher's) counters when scraped."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ..cache.prefix_cache import PrefixCache
from ..errors import InvalidArgumentTypeError
from .names import (
    CACHE_METRICS,
    HOST_METRICS,
    PUBLISHER_METRICS,
    STORAGE_METRICS,
    MetricSpec,
    check_user_labels,
    preset,
)
from .samples import Samples, cache_samples, host_samples, publisher_samples, storage_samples

if TYPE_CHECKING:
    from ..events.publisher import KVEventPublisher


class CacheCollector(Collector):
    """Exports ``cache.stats()`` (and ``publisher.stats()``) under a naming ``preset``
    (``"vllm"`` or ``"sglang"``, see :mod:`radixkv.metrics.names`), with ``labels`` added
    to every series (model name, engine id, ranks...).

    A cache with a host tier also exports the host tier's series (``tier="host"`` on the
    per-tier metrics, and :data:`~radixkv.metrics.names.HOST_METRICS`); one with a storage
    tier, :data:`~radixkv.metrics.names.STORAGE_METRICS`. Register it with a
    ``prometheus_client`` registry (or use
    :class:`~radixkv.metrics.MetricsExporter`). Nothing is done per cache call: each scrape
    calls ``stats()`` once, on the scraping thread. Raises :class:`ConfigError` for an
    unknown preset or a bad label, :class:`InvalidArgumentTypeError` for a non-cache or a
    ``publisher`` that is no KV event publisher (it must have ``stats()``).
    """

    def __init__(self, cache: PrefixCache, publisher: KVEventPublisher | None = None, *,
                 preset_name: str = "vllm", labels: Mapping[str, str] | None = None) -> None:
        if not isinstance(cache, PrefixCache):
            raise InvalidArgumentTypeError(f"expected a PrefixCache, got {cache!r:.80}")
        # duck-typed: importing the publisher's class would need the `events` extra
        if publisher is not None and not callable(getattr(publisher, "stats", None)):
            raise InvalidArgumentTypeError(
                f"publisher must be a KVEventPublisher or None, got {publisher!r:.80}")
        self.cache = cache
        self.publisher = publisher
        self.preset = preset(preset_name)
        self.labels = check_user_labels({} if labels is None else labels, self.preset)

    def collect(self) -> Iterator[Metric]:
        stats = self.cache.stats()
        yield from self._families(CACHE_METRICS, cache_samples(stats))
        if stats.host is not None:
            yield from self._families(HOST_METRICS, host_samples(stats.host))
        if stats.storage is not None:
            yield from self._families(STORAGE_METRICS, storage_samples(stats.storage))
        if self.publisher is not None:
            yield from self._families(PUBLISHER_METRICS,
                                      publisher_samples(self.publisher.stats()))

    def describe(self) -> Iterator[Metric]:
        """The metric names, without reading any counter (for registry checks)."""
        specs = CACHE_METRICS + (HOST_METRICS if self.cache.host is not None else ()) + (
            STORAGE_METRICS if self.cache.storage is not None else ()) + (
            PUBLISHER_METRICS if self.publisher is not None else ())
        for spec in specs:
            yield self._family(spec)

    def _families(self, specs: tuple[MetricSpec, ...], samples: Samples) -> Iterator[Metric]:
        for spec in specs:
            family = self._family(spec)
            for labels, value in samples[spec.key]:
                family.add_metric([*self.labels.values(), *(labels[k] for k in spec.labels)],
                                  float(value))
            yield family

    def _family(self, spec: MetricSpec) -> CounterMetricFamily | GaugeMetricFamily:
        names = [*self.labels, *(self.preset.label(label) for label in spec.labels)]
        kind = CounterMetricFamily if spec.kind == "counter" else GaugeMetricFamily
        return kind(self.preset.metric(spec.key), spec.help, labels=names)
