"""The publisher's thread off the scheduler's back: woken only when it waits idle, it takes
every batch queued while it was busy in one round (no wake-up per publish), in order."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

pytest.importorskip("zmq", reason="pyzmq is not installed (pip install -e '.[events]')")
msgpack = pytest.importorskip(
    "msgpack", reason="msgpack is not installed (pip install -e '.[events]')")

from radixkv.core.events import BlockRemoved, KVEvent  # noqa: E402
from radixkv.events import BatchEncoder, KVEventPublisher  # noqa: E402

from .support import insert, make_cache, publisher, wait_for  # noqa: E402


class Recording(BatchEncoder):
    """Holds the first batch until ``gate`` is set; records how many batches the thread had
    taken (and not sent) when it encoded each one."""

    def __init__(self, pub: KVEventPublisher, gate: threading.Event) -> None:
        super().__init__(pub.config)
        self.pub, self.gate = pub, gate
        self.taken: list[int] = []

    def batch(self, ts: float, events: Sequence[KVEvent], dp_rank: int) -> bytes:
        assert self.gate.wait(30)
        self.taken.append(self.pub._sender._busy)
        return super().batch(ts, events, dp_rank)


def test_batches_queued_while_the_thread_sends_go_out_in_one_round_unwoken() -> None:
    cache = make_cache(page_size=2, capacity=512)
    gate = threading.Event()
    with publisher() as pub:
        assert pub.flush(10)
        recording = Recording(pub, gate)
        pub._sender._encoder = recording  # type: ignore[assignment]
        insert(cache, [1, 2])
        assert pub.publish(cache) == [1]
        assert wait_for(lambda: pub._sender._busy, bool)  # taken, held while encoded
        woken = pub.stats()["sender_wakeups"]
        published = []
        for i in range(100):
            insert(cache, [1000 + 2 * i, 1001 + 2 * i])
            published += pub.publish(cache)
        assert published == list(range(2, 102)) and pub.stats()["pending"] == 101
        gate.set()
        assert pub.flush(10)
        stats = pub.stats()
        assert (stats["batches"], stats["sender_wakeups"]) == (102, woken)
        assert recording.taken == [1] + [100] * 100  # the hundred in one round
        assert pub._buffer is not None
        kept = pub._buffer.since(0)
        assert [seq for seq, _ in kept] == list(range(102))
        assert [len(msgpack.unpackb(payload)[1]) for _, payload in kept[1:]] == [1] * 101


def test_a_publish_wakes_the_thread_once_it_waits_idle() -> None:
    cache = make_cache(page_size=2)
    with publisher() as pub:
        assert pub.flush(10)
        assert wait_for(lambda: pub._sender._wake_len, lambda length: length == 1) == 1
        woken = pub.stats()["sender_wakeups"]
        insert(cache, [5, 6])
        assert pub.publish(cache) == [1]
        assert pub.stats()["sender_wakeups"] == woken + 1
        assert pub.flush(10) and pub.stats()["batches"] == 2


def test_a_pageless_event_in_the_caches_queue_never_reaches_the_wire() -> None:
    cache = make_cache(page_size=2)
    with publisher() as pub:
        insert(cache, [5, 6])
        cache.tree.log.push(BlockRemoved([], "GPU", (None, None)))
        assert pub.publish(cache) == [1]
        assert pub.flush(10) and pub._buffer is not None
        [(_, payload)] = pub._buffer.since(1)
        assert [event["type"] for event in msgpack.unpackb(payload)[1]] == ["BlockStored"]

