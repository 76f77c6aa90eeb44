"""KV events of the radixkv backend.

SGLang's scheduler drains ``tree_cache.take_events()`` once per step when KV events are on
(``--kv-events-config``; ``KvEventsPublisher.publish_kv_events``) and publishes them with its
own publisher as ``sglang.srt.disaggregation.kv_events`` structs. The backend queues
radixkv's events (``CacheConfig(events=True)``) and either

- converts them to SGLang's ``BlockStored`` / ``BlockRemoved`` / ``AllBlocksCleared`` and
  returns them, so SGLang's publisher sends them (the default); or
- publishes them on a radixkv :class:`~radixkv.events.KVEventPublisher` when
  ``RADIXKV_SGLANG_EVENTS_ENDPOINT`` is set (``RADIXKV_SGLANG_EVENTS_REPLAY``,
  ``RADIXKV_SGLANG_EVENTS_TOPIC`` and ``RADIXKV_SGLANG_EVENTS_BIND`` optional), and returns
  nothing to SGLang. Routers that connect to the engine (vllm-router, Dynamo) need the
  publisher to bind: ``RADIXKV_SGLANG_EVENTS_BIND=1`` binds even a concrete address such as
  ``tcp://127.0.0.1:5557``, which by vLLM's rule would connect.

Block hashes are radixkv's (chained page hashes seeded by the namespace), not SGLang's: a
router sees one consistent stream either way.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

__all__ = ["ENDPOINT_ENV", "EventSink", "make_sink"]

ENDPOINT_ENV = "RADIXKV_SGLANG_EVENTS_ENDPOINT"
REPLAY_ENV = "RADIXKV_SGLANG_EVENTS_REPLAY"
TOPIC_ENV = "RADIXKV_SGLANG_EVENTS_TOPIC"
BIND_ENV = "RADIXKV_SGLANG_EVENTS_BIND"
_BIND = {"": None, "1": True, "true": True, "0": False, "false": False}


class EventSink:
    """Turns the cache's drained radixkv events into what ``take_events`` returns."""

    def __init__(self, lora_names: Any = None, publisher: Any = None) -> None:
        self._lora_names = lora_names
        self._publisher = publisher

    def drain(self, events: list[Any]) -> list[Any]:
        """SGLang events for ``events`` (or ``[]`` after publishing them ourselves)."""
        if not events:
            return []
        if self._publisher is not None:
            self._publisher.publish_events(events)
            return []
        return list(self._convert(events))

    def close(self) -> None:
        if self._publisher is not None:
            self._publisher.close()

    def _convert(self, events: Iterable[Any]) -> Iterable[Any]:
        from sglang.srt.disaggregation import (  # type: ignore[import-not-found, unused-ignore]
            kv_events,
        )

        for event in events:
            kind = type(event).__name__
            if kind == "BlockStored":
                yield self._stored(kv_events, event)
            elif kind == "BlockRemoved":
                yield kv_events.BlockRemoved(block_hashes=list(event.block_hashes),
                                             medium=_medium(event))
            elif kind == "AllBlocksCleared":
                yield kv_events.AllBlocksCleared()

    def _stored(self, kv_events: Any, event: Any) -> Any:
        extra_key, salt = event.namespace
        lora_name = None
        if self._lora_names is not None and extra_key is not None:
            lora_name = self._lora_names.get(extra_key)
        return kv_events.BlockStored(
            block_hashes=list(event.block_hashes),
            parent_block_hash=event.parent_block_hash,
            token_ids=list(event.token_ids),
            block_size=event.block_size,
            lora_id=None,
            medium=_medium(event),
            cache_salt=salt,
            lora_name=lora_name,
        )


def _medium(event: Any) -> str:
    medium = getattr(event, "medium", None)
    return "GPU" if medium is None else str(medium)


def make_sink(enabled: bool, lora_names: Any = None) -> EventSink | None:
    """The sink for a cache whose events are ``enabled`` (``None`` when they are off)."""
    if not enabled:
        return None
    endpoint = os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        return EventSink(lora_names)
    from radixkv.events import KVEventPublisher

    bind = os.environ.get(BIND_ENV, "").strip().lower()
    if bind not in _BIND:
        raise ValueError(f"{BIND_ENV}={bind!r}: say 1 (bind), 0 (connect) or nothing "
                         "(vLLM's rule)")
    publisher = KVEventPublisher(endpoint=endpoint,
                                 replay_endpoint=os.environ.get(REPLAY_ENV) or None,
                                 topic=os.environ.get(TOPIC_ENV, ""), bind=_BIND[bind])
    return EventSink(lora_names, publisher)
