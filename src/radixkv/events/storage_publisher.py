"""StorageEventPublisher: the pages a cache wrote to the shared store, on their own stream.

The storage tier (L3) is shared by every engine of a model, so what it holds is not one
engine's state: its BlockStored events (medium ``STORAGE``, see
``PrefixCache.take_storage_events``) go out on their own endpoint and topic, apart from the
engine's device and host events; a router subscribes to every engine's storage endpoint
with the topic prefix. (One collector that every engine's publisher connects to would mix
their sequence numbers, each counting from 0: NVIDIA Dynamo's indexer then drops all but
one publisher's batches, see ``docs/storage.md``.) The wire form, sequence numbers,
heartbeats and replay are those of :class:`~radixkv.events.KVEventPublisher`; what differs:

- no AllBlocksCleared, neither at start nor after a ``reset()``: the store keeps its pages
  when an engine restarts or resets;
- no BlockRemoved: the store evicts on its own (Redis ``maxmemory``, FileStorage's size cap,
  Mooncake's eviction) without telling the engines, so what routers learn here is an upper
  bound of what L3 holds; a page gone since reads as a miss, never as wrong data;
- no :meth:`republish_all`: a shared store cannot be listed by one engine.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from ..cache.prefix_cache import PrefixCache
from ..errors import ConfigError, InvalidArgumentTypeError
from .publisher import KVEventPublisher
from .publisher_config import PublisherConfig

log = logging.getLogger("radixkv.events")

STORAGE_ENDPOINT = "tcp://*:5558"
"""The default endpoint of a storage publisher (one port above the engine's default)."""
STORAGE_TOPIC = "kv@storage"
"""The default topic of a storage publisher; give each engine ``kv@storage@{engine}`` and
let routers subscribe to the ``kv@storage`` prefix."""


class StorageEventPublisher(KVEventPublisher):
    """Publishes a cache's STORAGE events (pages its writes landed in L3) on their own
    endpoint and topic. Keyword options build a :class:`PublisherConfig` whose
    ``endpoint`` and ``topic`` default to :data:`STORAGE_ENDPOINT` and
    :data:`STORAGE_TOPIC`; a given ``config`` is used as it is. Call :meth:`publish` once
    per scheduler step, after ``cache.poll()`` (which collects the landed writes)."""

    clears_at_start: ClassVar[bool] = False

    def __init__(self, config: PublisherConfig | None = None, **options: Any) -> None:
        if config is None:
            options = {"endpoint": STORAGE_ENDPOINT, "topic": STORAGE_TOPIC} | options
        super().__init__(config, **options)

    def publish(self, cache: PrefixCache) -> list[int]:
        """Drain ``cache.take_storage_events()`` and publish them as one batch (none when
        there are none); returns the sequence numbers used. Cost on this thread:
        O(events). Events the cache's full storage event queue discarded are counted in
        ``stats()["dropped_events"]`` (and logged once); they cannot be recovered. Raises
        :class:`InvalidArgumentTypeError` for a non-cache and :class:`PublisherClosedError`
        after :meth:`close`; never for the network."""
        self._check(cache)
        if not isinstance(cache, PrefixCache):
            raise InvalidArgumentTypeError(f"expected a PrefixCache, got {cache!r:.80}")
        self._sender.take_resync()  # nothing to resync from: a lost batch stays lost
        storage = cache.storage
        dropped = 0 if storage is None else storage.writes.events.dropped_since_take
        events = cache.take_storage_events()
        if dropped:
            self.cache_dropped += dropped
            if self.cache_dropped == dropped:  # the first time only
                log.warning("storage event publisher: the cache's storage event queue "
                            "overflowed (%d events dropped; raise "
                            "CacheConfig.event_queue_limit or publish more often)", dropped)
        return self.publish_events(events)

    def republish_all(self, cache: PrefixCache) -> list[int]:
        """Always raises :class:`ConfigError`: no engine can list what a shared store
        holds (routers recover by replay, within ``buffer_steps`` batches)."""
        raise ConfigError("a storage event stream cannot be republished: the shared store "
                          "cannot be listed (use replay)")
