"""The storage event stream on a real ZMQ subscriber: pages whose L3 put landed arrive as
BlockStored with medium STORAGE on the storage publisher's own endpoint and topic, never on
the engine's, with no AllBlocksCleared (the store outlives engines), and two engines sharing
one store are told apart by their topics under one subscribed prefix."""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="pyzmq is not installed (pip install -e '.[events]')")
pytest.importorskip("msgpack", reason="msgpack is not installed (pip install -e '.[events]')")

from radixkv.errors import ConfigError  # noqa: E402
from radixkv.events import STORAGE_TOPIC, KVEventPublisher, StorageEventPublisher  # noqa: E402
from radixkv.storage import FileStorage, FileStorageConfig  # noqa: E402

from ..storage.tier_support import PAGE, Engine, engine, serve  # noqa: E402
from .support import LOOPBACK  # noqa: E402
from .wire_schema import decode_batch  # noqa: E402

PROMPT = list(range(100, 132))  # 8 pages
OTHER = [*range(100, 116), *range(500, 516)]  # shares PROMPT's first 4 pages


class Sub:
    """A real SUB socket on ``endpoint``, subscribed to ``prefix``."""

    def __init__(self, endpoint: str, prefix: str) -> None:
        self.context: Any = zmq.Context()
        self.sock = self.context.socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.SUBSCRIBE, prefix.encode())
        self.sock.connect(endpoint)

    def next(self, timeout: float = 10.0) -> tuple[str, int, bytes]:
        assert self.sock.poll(int(timeout * 1000)), "nothing arrived"
        topic, seq, payload = self.sock.recv_multipart()
        return topic.decode(), struct.unpack(">Q", seq)[0], payload

    def events(self, timeout: float = 10.0) -> tuple[str, int, list[dict[str, Any]]]:
        """The next batch that carries events (heartbeats are skipped), decoded."""
        deadline = time.monotonic() + timeout
        while True:
            topic, seq, payload = self.next(max(0.01, deadline - time.monotonic()))
            events, errors = decode_batch(payload)
            if events or time.monotonic() > deadline:
                assert errors == [], errors
                return topic, seq, events

    def close(self) -> None:
        self.sock.close()
        self.context.term()


def joined(sub: Sub, *topics: str) -> None:
    """Wait for a heartbeat of every topic, so the subscriptions are in place before
    anything is sent."""
    waiting = set(topics)
    while waiting:
        topic, _seq, payload = sub.next()
        assert decode_batch(payload)[0] == []
        waiting.discard(topic)


def store(tmp_path: Path) -> FileStorage:
    return FileStorage(FileStorageConfig(root=tmp_path / "l3"))


def written(made: Engine, tokens: list[int]) -> None:
    serve(made, tokens)
    assert made.cache.storage is not None
    made.cache.storage.settle()  # the puts land; their events are queued
    made.audited()


def storage_publisher(topic: str = STORAGE_TOPIC) -> StorageEventPublisher:
    return StorageEventPublisher(endpoint=LOOPBACK, bind=True, topic=topic,
                                 heartbeat_interval=0.05)


def test_landed_pages_arrive_as_storage_events_on_their_own_topic(tmp_path: Path) -> None:
    made = engine(store(tmp_path), events=True)
    with storage_publisher() as pub, KVEventPublisher(endpoint=LOOPBACK, bind=True,
                                                      heartbeat_interval=None) as device:
        assert device.flush(10)  # its AllBlocksCleared is out before anyone subscribes
        sub, engine_sub = Sub(pub.endpoint, STORAGE_TOPIC), Sub(device.endpoint, "")
        try:
            joined(sub, STORAGE_TOPIC)
            time.sleep(0.2)  # the engine publisher sends no heartbeats: let the SUB join
            written(made, PROMPT)
            assert pub.publish(made.cache) == [pub.next_sequence - 1]
            topic, seq, events = sub.events()
            assert topic == STORAGE_TOPIC and seq == pub.next_sequence - 1
            (event,) = events
            assert event["type"] == "BlockStored" and event["medium"] == "STORAGE"
            assert event["token_ids"] == PROMPT and event["block_size"] == PAGE
            assert len(event["block_hashes"]) == 8 and event["parent_block_hash"] is None
            device_events = made.cache.take_events()  # the engine's own: GPU/CPU pages
            assert device_events and all(getattr(e, "medium", None) != "STORAGE"
                                         for e in device_events)
            assert device.publish(made.cache) == []  # drained: no STORAGE event among them
            assert engine_sub.sock.poll(200) == 0  # nothing of L3 on the engine's stream
            assert pub.publish(made.cache) == []  # drained: nothing twice
        finally:
            sub.close()
            engine_sub.close()
    made.cache.close()


def test_two_engines_share_one_subscription_by_topic_prefix(tmp_path: Path) -> None:
    first = engine(store(tmp_path), events=True)
    second = engine(store(tmp_path), events=True, wait_policy="wait_complete")
    with storage_publisher(f"{STORAGE_TOPIC}@e1") as pub1, \
            storage_publisher(f"{STORAGE_TOPIC}@e2") as pub2:
        sub = Sub(pub1.endpoint, STORAGE_TOPIC)
        sub.sock.connect(pub2.endpoint)
        try:
            joined(sub, f"{STORAGE_TOPIC}@e1", f"{STORAGE_TOPIC}@e2")
            written(first, PROMPT)
            pub1.publish(first.cache)
            topic, _, (stored,) = sub.events()
            assert topic == f"{STORAGE_TOPIC}@e1" and stored["token_ids"] == PROMPT
            written(second, OTHER)  # restores PROMPT's first 4 pages, computes the rest
            stats = second.cache.stats().storage
            assert stats is not None and stats.restored_tokens == 16
            pub2.publish(second.cache)
            topic, _, (restored, child) = sub.events()
            # the second engine names the 4 pages it restored, then what it wrote below
            assert topic == f"{STORAGE_TOPIC}@e2" and restored["token_ids"] == OTHER[:16]
            assert restored["block_hashes"] == stored["block_hashes"][:4]
            assert child["token_ids"] == OTHER[16:]
            # the parent is a page both engines announced: one stream for the fleet
            assert child["parent_block_hash"] == stored["block_hashes"][3]
        finally:
            sub.close()
    first.cache.close()
    second.cache.close()


def test_the_storage_stream_has_its_own_topic_and_no_clear_or_republish(
        tmp_path: Path) -> None:
    made = engine(store(tmp_path), events=True)
    with StorageEventPublisher(endpoint=LOOPBACK, bind=True, heartbeat_interval=None) as pub:
        assert pub.config.topic == STORAGE_TOPIC
        assert pub.next_sequence == 0  # no AllBlocksCleared was sent at start
        with pytest.raises(ConfigError):
            pub.republish_all(made.cache)
        made.cache.reset()
        assert pub.publish(made.cache) == []  # nor after a reset
    made.cache.close()


def test_the_events_of_puts_that_land_during_close_can_still_be_taken(tmp_path: Path) -> None:
    made = engine(store(tmp_path), events=True)
    serve(made, PROMPT)
    early = made.cache.take_storage_events()  # the put is usually still in flight
    made.cache.close()  # waits for it: the pages are stored ...
    (event,) = early + made.cache.take_storage_events()  # ... and their event is not lost
    assert event.medium == "STORAGE" and list(event.token_ids) == PROMPT
    assert made.cache.take_storage_events() == []
    with StorageEventPublisher(endpoint=LOOPBACK, bind=True, heartbeat_interval=None) as pub:
        assert pub.publish(made.cache) == []  # a closed tier publishes nothing more


def test_storage_events_a_full_queue_dropped_are_counted_by_the_storage_publisher(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    made = engine(store(tmp_path), events=True, event_queue_limit=2)
    for first in (1000, 2000, 3000):  # three puts, three events: one past the limit
        written(made, list(range(first, first + 8)))
    with StorageEventPublisher(endpoint=LOOPBACK, bind=True, heartbeat_interval=None) as pub:
        assert pub.publish(made.cache) == []  # the whole queue went
        assert pub.stats()["dropped_events"] == 3
        assert "storage event queue overflowed (3 events dropped" in caplog.text
        written(made, list(range(4000, 4008)))
        assert len(pub.publish(made.cache)) == 1  # the next one arrives again
        assert pub.stats()["dropped_events"] == 3
    made.cache.close()
