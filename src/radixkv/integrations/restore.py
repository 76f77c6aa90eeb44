"""Prefixes the host tier and L3 hold, brought onto the device when an engine asks how much
of a prompt is cached, before it allocates the rest itself (SGLang's ``match_prefix``, vLLM's
``get_num_new_matched_tokens``).

L3 is asked once per request, under the storage tier's wait policy
(``prefetch(tokens, wait=True)``); the host prefix is then admitted with ``load_back`` (device
slots from the cache's pool, copies by the engine's copy engine) and the lease ends at once,
leaving the prefix cached on the device, which is what the engine's answer then counts.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

from radixkv import MatchResult, PrefixCache
from radixkv.cache.lease import Lease, LeaseState
from radixkv.errors import EngineError, OutOfSlotsError

__all__ = ["ASKED_MEMORY", "Restorer"]

logger = logging.getLogger(__name__)

ASKED_MEMORY = 4096
"""Requests whose prompt L3 was asked for, remembered so that a request the engine asks about
in every scheduling round while it waits is looked up in L3 once."""


class Restorer:
    """Brings what the host tier and L3 hold of a prompt beyond its device prefix onto the
    device. Never raises for what the tiers or the engine's code do: a prefix that cannot be
    restored is a miss."""

    def __init__(self, cache: PrefixCache, asks_storage: bool) -> None:
        self.cache = cache
        self.asks_storage = asks_storage
        self._asked: OrderedDict[Any, None] = OrderedDict()
        self._stuck: list[Lease] = []
        self.counters = {"restores": 0, "restored_tokens": 0, "misses": 0}
        """``restores``: prefixes loaded onto the device, ``restored_tokens`` their tokens
        (host and L3), ``misses``: host prefixes that could not be (no room, a failed
        copy)."""

    def restore(self, tokens: Any, namespace: Any, request_id: Any) -> MatchResult:
        """Load what host and L3 hold of ``tokens`` (a prompt the engine asks about for the
        request ``request_id``, ``None`` if unknown) onto the device; returns the match of
        ``tokens`` afterwards. Mutates the cache; costs a match (two when it loads), and an
        L3 lookup once per request."""
        if self.asks_storage and self._first_ask(request_id):
            self.cache.prefetch(tokens, namespace, wait=True)
        found = self.cache.match(tokens, namespace)
        if not found.host_length:
            return found
        self._load(tokens[: found.length + found.host_length], namespace)
        return self.cache.match(tokens, namespace)

    def _first_ask(self, rid: Any) -> bool:
        if rid is None:
            return True
        if rid in self._asked:
            return False
        self._asked[rid] = None
        if len(self._asked) > ASKED_MEMORY:
            self._asked.popitem(last=False)
        return True

    def _load(self, prefix: Any, namespace: Any) -> None:
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
