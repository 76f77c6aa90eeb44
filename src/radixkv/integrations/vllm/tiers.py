"""radixkv's host tier and storage tier (L3) below the connector's row buffer.

The row buffer is radixkv's device tier here; a host buffer below it holds backups by the
write policy, and L3 pages shared by a fleet of engines are read into it and written from
it. Both buffers are numpy arrays in the scheduler's process (the worker's row buffer is
reached there, so the worker must share that process: one worker, ``uni`` executor).

vLLM asks the connector how much of a prompt it holds before it allocates, so a prefix that
the host tier or L3 holds is brought into the row buffer inside that question
(:class:`Restorer`, as the SGLang backend does inside ``match_prefix``): L3 is asked once per
request (under the wait policy), the host prefix is admitted with ``load_back`` and the
lease ends at once, leaving the prefix cached in rows, which is what the answer then counts.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np

from radixkv import HostTier, PrefixCache, StorageLayout, StorageTier
from radixkv.cache.lease import Lease, LeaseState
from radixkv.errors import EngineError, OutOfSlotsError
from radixkv.integrations.vllm.host_copies import RowCopyEngine, poll_clock
from radixkv.integrations.vllm.settings import ConnectorSettings

__all__ = ["Restorer", "TierParts", "build_tiers", "store_from_url"]

logger = logging.getLogger(__name__)

ASKED_MEMORY = 4096
"""Requests whose prompt L3 was asked for, remembered so that a request vLLM asks about in
every scheduling round while it waits is looked up in L3 once."""
WAIT_POLLS = 4.0
"""How many polls a wait for a copy lasts (every copy completes at the first poll but for
backups held until their step has run)."""


@dataclass(frozen=True)
class TierParts:
    """What a cache with tiers below the row buffer is built from."""

    host: HostTier
    storage: StorageTier | None
    copy_engine: RowCopyEngine
    store: Any


def build_tiers(settings: ConnectorSettings, row_shape: tuple[int, ...], dtype: Any,
                model: str, *, negative_control: bool = False) -> TierParts | None:
    """The host tier (and L3) ``settings`` ask for, for rows of ``row_shape`` (layers,
    2 x KV heads x head size) and numpy ``dtype``; ``None`` for none."""
    if settings.host_tokens is None:
        return None
    host = HostTier(capacity=settings.host_tokens, write_policy=settings.write_policy,
                    wait_timeout_s=WAIT_POLLS, clock=poll_clock())
    engine = RowCopyEngine(settings.host_tokens, row_shape, dtype,
                           negative_control=negative_control)
    if settings.storage is None:
        return TierParts(host, None, engine, None)
    layout = StorageLayout(
        model=model, dtype=np.dtype(dtype).name, page_size=settings.page_size,
        component="full", layers=(0, row_shape[0] if row_shape else 1), row_shape=row_shape,
        layout="radixkv vLLM connector rows: per layer, every KV head's key then value")
    storage = StorageTier(layouts=(layout,), prefetch_threshold=settings.prefetch_threshold,
                          wait_policy=settings.wait_policy, timeout_s=settings.timeout_s)
    return TierParts(host, storage, engine, store_from_url(settings.storage,
                                                           settings.storage_prefix))


def store_from_url(url: str, prefix: str) -> Any:
    """The storage backend a checked ``redis://``, ``redis+unix://`` or ``file://`` URL
    names (the ``storage`` extra for Redis)."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        from radixkv.storage import FileStorage, FileStorageConfig

        return FileStorage(FileStorageConfig(root=parts.path))
    from radixkv.storage import RedisStorage, RedisStorageConfig

    password = unquote(parts.password) if parts.password else None
    if parts.scheme == "redis+unix":
        db = int(parse_qs(parts.query).get("db", ["0"])[0])
        return RedisStorage(RedisStorageConfig(prefix=prefix, unix_socket=parts.path, db=db,
                                               password=password))
    return RedisStorage(RedisStorageConfig(
        prefix=prefix, host=parts.hostname or "127.0.0.1", port=parts.port or 6379,
        db=int(parts.path.strip("/") or 0), password=password))


class Restorer:
    """Brings what the host tier and L3 hold of a prompt beyond its cached prefix into the
    row buffer. Never raises for what the tiers or the store do: a prefix that cannot be
    restored is a miss."""

    def __init__(self, cache: PrefixCache, asks_storage: bool) -> None:
        self.cache = cache
        self.asks_storage = asks_storage
        self._asked: OrderedDict[str, None] = OrderedDict()
        self._stuck: list[Lease] = []
        self.counters = {"restores": 0, "restored_tokens": 0, "misses": 0}

    def restore(self, tokens: Any, namespace: Any, request_id: str) -> None:
        """Load what the host tier and L3 hold of ``tokens`` into rows (a lease admitted
        with ``load_back`` and ended at once). Mutates the cache."""
        if self.asks_storage and self._first_ask(request_id):
            self.cache.prefetch(tokens, namespace, wait=True)
        found = self.cache.match(tokens, namespace)
        if not found.host_length:
            return
        try:
            lease = self.cache.admit(tokens[: found.length + found.host_length], namespace,
                                     load_back=True)
        except (OutOfSlotsError, EngineError) as error:
            logger.debug("radixkv: a host prefix was not restored: %s", error)
            self.counters["misses"] += 1
            return
        if not lease.ready:
            try:
                self.cache.wait(lease)
            except EngineError:  # its copy never answered: end it at a later poll
                self._stuck.append(lease)
                self.counters["misses"] += 1
                return
        self._end(lease)

    def _end(self, lease: Lease) -> None:
        if lease.state is LeaseState.FAILED:
            self.counters["misses"] += 1
            return
        self.cache.abort(lease)  # the restored prefix stays cached: it is the tree's
        self.counters["restores"] += 1
        self.counters["restored_tokens"] += lease.cached_length

    def settle(self) -> None:
        """End the loads a wait gave up on once their copies are answered (after every
        ``cache.poll()``)."""
        if self._stuck:
            waiting = [lease for lease in self._stuck
                       if lease.state is LeaseState.ACTIVE and not lease.ready]
            for lease in self._stuck:
                if lease not in waiting:
                    self._end(lease)
            self._stuck = waiting

    def _first_ask(self, request_id: str) -> bool:
        if request_id in self._asked:
            return False
        self._asked[request_id] = None
        if len(self._asked) > ASKED_MEMORY:
            self._asked.popitem(last=False)
        return True
