"""Regression tests for the KV-event defects of the hardening issue: the bounded event queue
and what the publisher does about a drop, configuration checked at the boundary, the lag
counter, encoding off the scheduler thread, and closing."""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Sequence
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="pyzmq is not installed (pip install -e '.[events]')")
msgpack = pytest.importorskip(
    "msgpack", reason="msgpack is not installed (pip install -e '.[events]')")

from radixkv import CacheConfig  # noqa: E402
from radixkv.core.events import AllBlocksCleared, KVEvent  # noqa: E402
from radixkv.errors import ConfigError, InvalidArgumentTypeError  # noqa: E402
from radixkv.events import BatchEncoder, KVEventPublisher, PublisherConfig  # noqa: E402

from .support import insert, make_cache, publisher, wait_for  # noqa: E402


def kept_types(pub: KVEventPublisher) -> list[list[str]]:
    assert pub._buffer is not None and pub.flush(10)
    return [[e["type"] for e in msgpack.unpackb(payload)[1]]
            for _, payload in pub._buffer.since(0)]


# ---------------------------------------------------------------- the cache's event queue

def test_a_full_event_queue_is_discarded_whole_counted_and_bounded() -> None:
    cache = make_cache(page_size=2, event_queue_limit=3)
    log = cache.tree.log
    for i in range(5):
        insert(cache, [10 * i, 10 * i + 1])  # one BlockStored each
        assert len(log._events) <= 3
    assert (log.dropped, log.dropped_since_take) == (5, 5)
    assert cache.take_events() == []  # a stream with a hole would mislead a router
    assert log.dropped_since_take == 0
    insert(cache, [90, 91])
    assert [type(e).__name__ for e in cache.take_events()] == ["BlockStored"]
    assert log.dropped == 5
    cache.check_invariants()


def test_a_thousand_requests_nobody_drains_stay_within_the_limit() -> None:
    cache = make_cache(page_size=2, capacity=4096, event_queue_limit=50)
    for i in range(1000):
        insert(cache, [i, i + 1, i + 2, i + 3])
    assert len(cache.tree.log._events) <= 50
    assert cache.tree.log.dropped > 900


@pytest.mark.parametrize("limit", [0, -1, True, 2.5, None])
def test_a_bad_event_queue_limit_is_a_config_error(limit: object) -> None:
    with pytest.raises(ConfigError):
        CacheConfig(capacity=8, events=True, event_queue_limit=limit)  # type: ignore[arg-type]


def test_the_publisher_reports_a_drop_and_republishes_everything() -> None:
    cache = make_cache(page_size=2, event_queue_limit=2)
    with publisher() as pub:
        for i in range(4):
            insert(cache, [10 * i, 10 * i + 1])
        assert pub.publish(cache) == [1, 2]  # AllBlocksCleared, then the four pages
        assert kept_types(pub)[1:] == [["AllBlocksCleared"], ["BlockStored"] * 4]
        stats = pub.stats()
        assert (stats["dropped_events"], stats["resyncs"]) == (4, 1)
        insert(cache, [80, 81])
        assert pub.publish(cache) == [3]  # back to plain batches
        assert pub.stats()["resyncs"] == 1


def test_without_resync_the_drop_is_logged_once_and_left_to_the_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = make_cache(page_size=2, event_queue_limit=1)
    with publisher(resync_on_drop=False) as pub, caplog.at_level(logging.WARNING):
        for round_ in range(2):
            insert(cache, [round_, 50])
            insert(cache, [round_, 60])
            assert pub.publish(cache) == []
        assert pub.stats()["dropped_events"] == 4
        assert len([r for r in caplog.records if "overflowed" in r.getMessage()]) == 1
        assert pub.republish_all(cache) == [1, 2]


def test_a_full_send_queue_drops_counts_and_resyncs() -> None:
    cache = make_cache(page_size=2)
    gate = threading.Event()
    with publisher(queue_batches=1) as pub:
        assert pub.flush(10)
        pub._sender._encoder = Gated(pub.config, gate)  # type: ignore[assignment]
        published = []
        for i in range(3):
            insert(cache, [i, 40])
            published.append(pub.publish(cache))
            assert wait_for(lambda: pub._sender._busy, bool)  # the first is being encoded
        # the second waits in the queue; the third did not fit
        assert published == [[1], [2], []]
        assert pub.stats()["dropped_events"] == 1
        gate.set()
        insert(cache, [7, 7])
        seqs = pub.publish(cache)
        assert seqs[0] == 3 and pub.stats()["resyncs"] == 1
        assert kept_types(pub)[3] == ["AllBlocksCleared"]


# ---------------------------------------------------------------- configuration

@pytest.mark.parametrize(
    "options",
    [{"endpoint": "tcp://*:99999"}, {"endpoint": "tcp://*:-1"}, {"endpoint": "tcp://host"},
     {"endpoint": "tcp://*:५५"}, {"replay_endpoint": "tcp://*:70000"},
     {"endpoint": "tcp://*:65535", "dp_rank": 1}, {"legacy_arrays": "no"},
     {"signed_hashes": 1}, {"lora_from_extra_key": None}, {"resync_on_drop": "yes"},
     {"heartbeat_interval": 0}, {"heartbeat_interval": -1.0},
     {"heartbeat_interval": float("nan")}, {"heartbeat_interval": "1"},
     {"heartbeat_interval": True}, {"queue_batches": 0}],
)
def test_bad_publisher_settings_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        PublisherConfig(**options)


def test_good_publisher_settings_are_kept_and_numbers_converted_once() -> None:
    config = PublisherConfig(endpoint="tcp://*:*", replay_endpoint="tcp://[::1]:65535",
                             heartbeat_interval=2)
    assert config.heartbeat_interval == 2.0 and type(config.heartbeat_interval) is float
    assert PublisherConfig(endpoint="tcp://*:0", dp_rank=3).pub_endpoint() == "tcp://*:0"
    assert PublisherConfig(heartbeat_interval=None).heartbeat_interval is None


def test_what_is_not_a_cache_or_an_event_is_a_type_error() -> None:
    with publisher() as pub:
        for call in (lambda: pub.publish(None), lambda: pub.republish_all("cache"),  # type: ignore[arg-type]
                     lambda: pub.publish_events([None])):  # type: ignore[list-item]
            with pytest.raises(InvalidArgumentTypeError):
                call()
        assert pub.next_sequence == 1
    with pytest.raises(InvalidArgumentTypeError):
        KVEventPublisher("tcp://*:5557")  # type: ignore[arg-type]


# ---------------------------------------------------------------- lag and threads

def test_a_router_that_lagged_past_the_buffer_is_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = make_cache(page_size=2)
    with publisher(buffer_steps=2) as pub:
        for i in range(5):
            insert(cache, [i, 30])
            pub.publish(cache)
        assert pub.flush(10) and pub.replay_endpoint is not None
        context = zmq.Context()
        client = context.socket(zmq.DEALER)
        client.setsockopt(zmq.LINGER, 0)
        client.connect(pub.replay_endpoint)
        try:
            with caplog.at_level(logging.WARNING, logger="radixkv.events"):
                for start in (1, 4, 0):  # kept: 4 and 5
                    client.send_multipart([b"", struct.pack(">Q", start)])
                    while client.poll(5000) and client.recv_multipart()[2] != b"\xff" * 8:
                        pass
            stats = pub.stats()
            assert (stats["replay_requests"], stats["replay_lagged"]) == (3, 2)
            assert stats["replay_missed"] == 3 + 4
            assert len([r for r in caplog.records if "left the replay" in r.getMessage()]) == 1
        finally:
            client.close()
            context.term()


class Gated(BatchEncoder):
    """An encoder that holds every batch until ``gate`` is set (a slow, huge batch)."""

    def __init__(self, config: PublisherConfig, gate: threading.Event) -> None:
        super().__init__(config)
        self.gate = gate

    def batch(self, ts: float, events: Sequence[KVEvent], dp_rank: int) -> bytes:
        assert self.gate.wait(30)
        return super().batch(ts, events, dp_rank)


def test_encoding_happens_on_the_publishers_thread_not_the_callers() -> None:
    gate = threading.Event()
    with publisher() as pub:
        assert pub.flush(10)
        pub._sender._encoder = Gated(pub.config, gate)  # type: ignore[assignment]
        returned: list[list[int]] = []
        caller = threading.Thread(
            target=lambda: returned.append(pub.publish_events([AllBlocksCleared()] * 3)))
        caller.start()
        caller.join(10)
        assert returned == [[1, 2, 3]]  # numbered and queued while nothing could be encoded
        assert pub.stats()["pending"] == 3 and not pub.flush(0.05)
        gate.set()
        assert pub.flush(10) and pub.stats()["batches"] == 4


def test_close_sends_what_is_queued_first() -> None:
    pub = publisher()
    pub.publish_events([AllBlocksCleared()] * 5)
    buffer = pub._buffer
    pub.close()
    assert buffer is not None and [seq for seq, _ in buffer.since(0)] == list(range(6))
    assert pub.stats()["dropped_events"] == 0
