"""The tiers below SGLang's KV pool: radixkv's host tier over a host buffer of SGLang's KV
rows, and its storage tier (L3) shared by a fleet of engines.

SGLang allocates a request's KV itself, after ``match_prefix``; so a prefix that host memory
or L3 holds is brought onto the device inside ``match_prefix`` (:class:`Restorer`), before
SGLang sees the match: the pages L3 holds are fetched into host slots (under the wait
policy), the host prefix is admitted with ``load_back`` (device slots from SGLang's own
allocator, the copies by :class:`~.copy_engine.SGLangCopyEngine`), and the match SGLang gets
then covers them as ordinary device-cached KV. Writes follow the host tier's write policy:
a finished request's pages are backed up to the host, and from there written to L3, at the
next ``cache.poll()``, which the backend runs after every batch (SGLang's
``flush_pending_backups``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy.typing as npt

from radixkv import HostTier, MatchResult, PrefixCache, StorageLayout, StorageTier
from radixkv.cache.lease import Lease, LeaseState
from radixkv.errors import EngineError, OutOfSlotsError
from radixkv.integrations.sglang.copy_engine import SGLangCopyEngine, layout_dtype, row_shape
from radixkv.integrations.sglang.settings import TierSettings, store_from_url

__all__ = ["Restorer", "TierParts", "build_tiers"]

logger = logging.getLogger(__name__)

ASKED_MEMORY = 4096
"""Requests whose prompt L3 was asked for, remembered so that a request SGLang matches again
in every scheduling round while it waits is looked up in L3 once."""


@dataclass(frozen=True)
class TierParts:
    """What a cache with tiers below the device is built from."""

    host: HostTier
    storage: StorageTier | None
    copy_engine: SGLangCopyEngine
    store: Any


def build_tiers(settings: TierSettings, kv_pool: Any, page_size: int, model: str,
                page_hash: str, *, negative_control: bool = False) -> TierParts | None:
    """The host tier (and L3) ``settings`` ask for over ``kv_pool``; ``None`` for none."""
    if settings.host_tokens is None:
        return None
    settings.check_page(page_size)
    host = HostTier(capacity=settings.host_tokens, write_policy=settings.write_policy)
    engine = SGLangCopyEngine(kv_pool, settings.host_tokens + page_size,
                              negative_control=negative_control)
    if settings.storage is None:
        return TierParts(host, None, engine, None)
    storage = StorageTier(layouts=(layout_of(kv_pool, page_size, model, page_hash),),
                          prefetch_threshold=settings.prefetch_threshold,
                          wait_policy=settings.wait_policy, timeout_s=settings.timeout_s)
    return TierParts(host, storage, engine, store_from_url(settings.storage, settings.prefix))


def layout_of(kv_pool: Any, page_size: int, model: str, page_hash: str) -> StorageLayout:
    """What one stored page of ``kv_pool`` is (everything that decides its bytes)."""
    start = int(getattr(kv_pool, "start_layer", 0) or 0)
    layers, width = row_shape(kv_pool)
    text = (f"sglang MHATokenToKVPool NHD; per layer key then value; heads "
            f"{kv_pool.head_num}; head_dim {kv_pool.head_dim}; v_head_dim {kv_pool.v_head_dim}")
    return StorageLayout(model=model, dtype=layout_dtype(kv_pool.store_dtype),
                         page_size=page_size, component="full", layers=(start, start + layers),
                         row_shape=(layers, width), layout=text, page_hash=page_hash)


class Restorer:
    """Brings what the host tier and L3 hold of a prompt beyond its device prefix onto the
    device (SGLang's pool), inside ``match_prefix``. Never raises for what the tiers or the
    engine's code do: a prefix that cannot be restored is a miss."""

    def __init__(self, cache: PrefixCache, asks_storage: bool) -> None:
        self.cache = cache
        self.asks_storage = asks_storage
        self._asked: OrderedDict[Any, None] = OrderedDict()
        self._stuck: list[Lease] = []
        self.counters = {"restores": 0, "restored_tokens": 0, "misses": 0}
        """``restores``: prefixes loaded onto the device, ``restored_tokens`` their tokens
        (host and L3), ``misses``: host prefixes that could not be (no room, a failed
        copy)."""

    def restore(self, tokens: npt.NDArray[Any], namespace: Any, request: Any) -> MatchResult:
        """Load what host and L3 hold of ``tokens`` (a key SGLang matches for the request
        ``request``, ``None`` if unknown) onto the device; returns the match of ``tokens``
        afterwards. Mutates the cache; costs a match (two when it loads), and an L3 lookup
        once per request."""
        if self.asks_storage and self._first_ask(request):
            self.cache.prefetch(tokens, namespace, wait=True)
        found = self.cache.match(tokens, namespace)
        if not found.host_length:
            return found
        self._load(tokens[: found.length + found.host_length], namespace)
        return self.cache.match(tokens, namespace)

    def _first_ask(self, request: Any) -> bool:
        rid = getattr(request, "rid", None)
        if rid is None:
            return True
        if rid in self._asked:
            return False
        self._asked[rid] = None
        if len(self._asked) > ASKED_MEMORY:
            self._asked.popitem(last=False)
        return True

    def _load(self, prefix: npt.NDArray[Any], namespace: Any) -> None:
        cache = self.cache
        try:
            lease = cache.admit(prefix, namespace, load_back=True)
        except (OutOfSlotsError, EngineError) as error:
            logger.debug("radixkv: host prefix of %d tokens not restored: %s", len(prefix), error)
            self.counters["misses"] += 1
            return
        if not lease.ready:
            try:
                cache.wait(lease)
            except EngineError:  # the copy engine never answered: end it at a later poll
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
        """End the loads a wait gave up on once their copies are answered (run at every
        ``cache.poll()``)."""
        if self._stuck:
            waiting = [lease for lease in self._stuck
                       if lease.state is LeaseState.ACTIVE and not lease.ready]
            for lease in self._stuck:
                if lease not in waiting:
                    self._end(lease)
            self._stuck = waiting
