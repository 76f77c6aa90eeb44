"""The cache drives its tiers below the device through one list of LowerTier s, in order:
a recording tier added below the host tier hears every verb the life-cycle calls."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.core.events import KVEvent
from radixkv.core.keys import DEFAULT_NAMESPACE, Namespace, encode_tokens
from radixkv.core.node import Node
from radixkv.errors import StorageTimeoutError
from radixkv.host import HostTier, NumpyCopyEngine


class Recorder:
    """A tier below the host that holds nothing and records each verb it is asked."""

    name = "storage"

    def __init__(self, closes: bool = False, stalls: bool = False) -> None:
        self.calls: list[object] = []
        self.closes, self.stalls = closes, stalls
        self.summary = object()

    def lookup(self, key: bytes, namespace: Namespace) -> None:
        self.calls.append("lookup")

    def prepare_load(self, node: Node, end: int) -> None:
        self.calls.append(("prepare_load", end))

    def load(self, node: Node, parts: Sequence[np.ndarray], gained: int) -> None:
        raise AssertionError("asked to load after prepare_load answered None")

    def complete_load(self, tickets: Collection[int] | None) -> None:
        self.calls.append(("complete_load", tickets))

    def prepare_store(self, nodes: Sequence[Node]) -> None:
        self.calls.append("prepare_store")

    def complete_store(self) -> None:
        self.calls.append("complete_store")

    def poll(self) -> None:
        self.calls.append("poll")

    def settle(self) -> None:
        self.calls.append("settle")
        if self.stalls:
            raise StorageTimeoutError("a stalled recorder")

    def take_events(self) -> list[KVEvent]:
        self.calls.append("take_events")
        return []

    def stats(self) -> object:
        return self.summary

    def reserved(self) -> None:
        self.calls.append("reserved")

    def check(self, reserved: Sequence[np.ndarray] | None) -> None:
        self.calls.append(("check", reserved))

    def snapshot(self) -> None:
        return None

    def reset(self) -> None:
        self.calls.append("reset")

    def close(self) -> bool:
        self.calls.append("close")
        return self.closes


def host_cache(recorder: Recorder) -> PrefixCache:
    cache = PrefixCache(CacheConfig(capacity=32, host=HostTier(capacity=64)),
                        NumpyCopyEngine())
    cache.lower = (*cache.lower, recorder)  # a third tier, below the host tier
    return cache


def taken(recorder: Recorder) -> list[object]:
    calls, recorder.calls = recorder.calls, []
    return calls


def test_the_lower_tiers_are_listed_from_the_device_down() -> None:
    assert PrefixCache(CacheConfig(capacity=32)).lower == ()
    cache = PrefixCache(CacheConfig(capacity=32, host=HostTier(capacity=64)))
    assert cache.lower == (cache.host,) and cache.storage is None


def test_admission_match_insert_and_poll_ask_every_lower_tier() -> None:
    recorder = Recorder()
    cache = host_cache(recorder)
    lease = cache.admit(list(range(8)), load_back=True)
    assert taken(recorder) == ["lookup", "prepare_store", "complete_store"]
    cache.finish(lease)
    assert taken(recorder) == ["prepare_store", "complete_store"]
    cache.match(list(range(8)))
    assert taken(recorder) == ["prepare_store"]
    assert cache.poll() == [] and taken(recorder) == ["poll", "complete_store"]
    assert cache.wait() == [] and taken(recorder) == [("complete_load", None)]
    cache.check_invariants()
    assert taken(recorder) == ["reserved", ("check", None)]
    assert cache.stats().storage is recorder.summary


def test_a_load_back_asks_every_lower_tier_for_its_part() -> None:
    recorder = Recorder()
    cache = host_cache(recorder)
    tokens = list(range(8))
    cache.finish(cache.admit(tokens))
    assert cache.host is not None
    cache.host.backup(cache.tree.match(encode_tokens(tokens), DEFAULT_NAMESPACE).path)
    cache.wait()
    assert cache.evict(full=32) == {"full": 8}
    assert cache.match(tokens).length == 0 and cache.match(tokens).host_length == 8
    taken(recorder)
    lease = cache.admit(tokens, load_back=True)
    assert lease.cached_length == 8 and not lease.ready
    assert taken(recorder) == ["lookup", ("prepare_load", 8), "prepare_store",
                               "complete_store"]
    (ticket,) = lease.waiting
    assert cache.wait(lease) == [lease] and lease.ready
    assert taken(recorder) == [("complete_load", [ticket])]
    cache.check_invariants()
    cache.finish(lease)


def test_reset_settles_every_tier_before_any_forgets() -> None:
    recorder = Recorder(stalls=True)
    cache = host_cache(recorder)
    cache.finish(cache.admit(list(range(8))))
    cache.wait()  # the backup landed: the host holds the prefix, nothing is in flight
    assert cache.stats().host is not None and cache.stats().host.components["full"].cached == 8
    before = cache.snapshot()
    taken(recorder)
    with pytest.raises(StorageTimeoutError):
        cache.reset()
    assert taken(recorder) == ["settle"]  # nothing reset: the host tier kept its values too
    assert cache.snapshot() == before
    cache.check_invariants()
    taken(recorder)
    recorder.stalls = False
    cache.reset()
    assert taken(recorder) == ["settle", "reset"]
    assert cache.match(list(range(8))).length == 0
    assert cache.stats().host is not None and cache.stats().host.components["full"].cached == 0


def test_the_snapshot_sees_a_host_tier_that_forgot_before_a_tier_below_raised() -> None:
    """Negative control of the test above: had the host tier been reset before the tier
    below raised, the snapshot would differ."""
    cache = host_cache(Recorder())
    cache.finish(cache.admit(list(range(8))))
    cache.wait()
    before = cache.snapshot()
    assert cache.host is not None
    cache.host.reset()
    assert cache.snapshot() != before


def test_close_drops_the_tiers_that_closed_and_keeps_the_others() -> None:
    staying, closing = Recorder(), Recorder(closes=True)
    cache = host_cache(staying)
    cache.lower = (*cache.lower, closing)
    cache.close()
    assert taken(staying) == ["close"] and taken(closing) == ["close", "take_events"]
    assert cache.lower == (cache.host, staying)
    cache.close()
    assert taken(staying) == ["close"] and taken(closing) == []
