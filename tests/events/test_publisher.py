"""KVEventPublisher behaviour: configuration, batching, failures that never reach the cache,
closing without leaks, republishing, and which components publish."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="pyzmq is not installed (pip install -e '.[events]')")
msgpack = pytest.importorskip(
    "msgpack", reason="msgpack is not installed (pip install -e '.[events]')")

from radixkv import AllBlocksCleared, BlockStored  # noqa: E402
from radixkv.errors import ConfigError, PublisherClosedError  # noqa: E402
from radixkv.events import KVEventPublisher, PublisherConfig, offset_endpoint  # noqa: E402

from .support import LOOPBACK, free_port, insert, make_cache, publisher, wait_for  # noqa: E402

DEFAULT = (None, None)


def replay_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in ("radixkv-replay", "radixkv-events")]


def kept(pub: KVEventPublisher) -> list[list[Any]]:
    """The events of every batch the publisher keeps for replay, decoded (once sent)."""
    assert pub._buffer is not None
    assert pub.flush(10)
    return [msgpack.unpackb(payload)[1] for _, payload in pub._buffer.since(0)]


@pytest.mark.parametrize(
    "options",
    [{"endpoint": "localhost:5557"}, {"replay_endpoint": "nowhere"}, {"buffer_steps": 0},
     {"dp_rank": -1}, {"hwm": True}, {"topic": b"bytes"}, {"bind": "yes"},
     {"republish_chunk": 0}],
)
def test_bad_configurations_are_rejected(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        PublisherConfig(**options)


@pytest.mark.parametrize(
    ("endpoint", "binds"),
    [("tcp://*:5557", True), ("tcp://[::]:5557", True), ("ipc:///tmp/kv", True),
     ("inproc://kv", True), ("tcp://collector:5557", False), ("tcp://127.0.0.1:5557", False)],
)
def test_bind_or_connect_follows_vllms_rule_unless_told(endpoint: str, binds: bool) -> None:
    assert PublisherConfig(endpoint=endpoint).binds() is binds
    assert PublisherConfig(endpoint=endpoint, bind=not binds).binds() is (not binds)


def test_data_parallel_ranks_offset_tcp_ports_and_inproc_names() -> None:
    assert offset_endpoint("tcp://*:5557", 2) == "tcp://*:5559"
    assert offset_endpoint("tcp://*:0", 2) == "tcp://*:0"
    assert offset_endpoint("inproc://kv", 1) == "inproc://kv_dp1"
    assert offset_endpoint("tcp://*:5557", 0) == "tcp://*:5557"
    config = PublisherConfig(endpoint="tcp://*:6000", replay_endpoint="tcp://*:7000", dp_rank=3)
    assert (config.pub_endpoint(), config.router_endpoint()) == ("tcp://*:6003", "tcp://*:7003")


def test_a_rank_publishes_on_its_offset_port_and_names_itself_in_every_batch() -> None:
    port = free_port()
    with KVEventPublisher(endpoint=f"tcp://127.0.0.1:{port - 1}", bind=True,
                          replay_endpoint=LOOPBACK, dp_rank=1, heartbeat_interval=None) as pub:
        assert pub.endpoint == f"tcp://127.0.0.1:{port}"
        assert pub._buffer is not None and pub.flush(10)
        assert [msgpack.unpackb(p)[2] for _, p in pub._buffer.since(0)] == [1]


def test_connect_mode_reaches_a_collector_that_binds() -> None:
    context = zmq.Context()
    collector = context.socket(zmq.SUB)
    collector.setsockopt(zmq.LINGER, 0)
    collector.setsockopt(zmq.SUBSCRIBE, b"")
    port = collector.bind_to_random_port("tcp://127.0.0.1")
    try:
        with KVEventPublisher(endpoint=f"tcp://127.0.0.1:{port}") as pub:  # connects
            assert not pub.config.binds()
            got = wait_for(lambda: pub.publish_events([AllBlocksCleared()])
                           and collector.poll(20) and collector.recv_multipart(),
                           bool, timeout=10)
            assert got and len(got) == 3 and got[0] == b""
    finally:
        collector.close()
        context.term()


def test_start_up_sends_all_blocks_cleared_and_empty_steps_send_nothing() -> None:
    cache = make_cache()
    with publisher() as pub:
        assert pub.next_sequence == 1
        assert pub.publish(cache) == []
        insert(cache, [1, 2, 3])  # no full page
        assert pub.publish(cache) == []
        assert kept(pub) == [[{"type": "AllBlocksCleared"}]]


def test_one_batch_per_step_and_all_blocks_cleared_starts_a_batch() -> None:
    cache = make_cache()
    with publisher() as pub:
        insert(cache, list(range(8)))
        insert(cache, list(range(10, 18)))
        assert pub.publish(cache) == [1]
        insert(cache, list(range(20, 28)))
        cache.reset()
        insert(cache, list(range(30, 38)))
        assert pub.publish(cache) == [2, 3]
        batches = kept(pub)
        assert [[e["type"] for e in b] for b in batches] == [
            ["AllBlocksCleared"], ["BlockStored", "BlockStored"], ["BlockStored"],
            ["AllBlocksCleared", "BlockStored"]]
        assert batches[3][1]["token_ids"] == list(range(30, 38))


def test_a_failed_send_is_counted_logged_once_and_kept_for_replay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        def __init__(self, sock: Any) -> None:
            self.sock = sock

        def send_multipart(self, frames: list[bytes], flags: int = 0) -> None:
            raise zmq.ZMQError(zmq.EHOSTUNREACH, "injected")

        def close(self) -> None:
            self.sock.close()

    cache = make_cache()
    with publisher() as pub:
        assert pub.flush(10)
        pub._sender.socket = Broken(pub._sender.socket)  # type: ignore[assignment]
        with caplog.at_level(logging.WARNING, logger="radixkv.events"):
            for start in (0, 100, 200):
                insert(cache, list(range(start, start + 8)))
                assert len(pub.publish(cache)) == 1  # no exception, a sequence number used
            assert pub.flush(10)
        assert pub.stats()["send_errors"] == 3
        assert len([r for r in caplog.records if r.name == "radixkv.events"]) == 1
        assert len(kept(pub)) == 4
        cache.check_invariants()
        assert cache.match(list(range(100, 108))).length == 8


def test_a_batch_that_cannot_be_encoded_goes_out_empty_and_the_next_publish_resyncs() -> None:
    cache = make_cache()
    insert(cache, list(range(8)))
    with publisher() as pub:
        bad = BlockStored([1], None, [object()], 1, "GPU", DEFAULT)  # type: ignore[list-item]
        assert pub.publish_events([bad]) == [1]  # numbered on this thread, encoded on its own
        assert kept(pub)[1] == []  # the number is kept: replay and routers see no hole
        assert pub.stats()["send_errors"] == 1
        assert pub.publish(cache) == [2, 3]  # everything, from AllBlocksCleared
        assert [[e["type"] for e in batch] for batch in kept(pub)[2:]] == [
            ["AllBlocksCleared"], ["BlockStored"]]
        assert pub.stats()["resyncs"] == 1
        assert pub.publish(cache) == []


def test_close_is_idempotent_stops_the_threads_and_publishing_afterwards_raises() -> None:
    cache = make_cache()
    before = len(replay_threads())
    pub = publisher()
    assert len(replay_threads()) == before + 2
    pub.close()
    pub.close()
    assert pub.closed and len(replay_threads()) == before
    insert(cache, list(range(8)))
    for call in (lambda: pub.publish(cache), lambda: pub.republish_all(cache),
                 lambda: pub.publish_events([AllBlocksCleared()])):
        with pytest.raises(PublisherClosedError):
            call()
    assert len(cache.take_events()) == 1  # still queued in the cache


def test_the_endpoints_are_free_again_after_close() -> None:
    with publisher() as first:
        endpoints = (first.endpoint, first.replay_endpoint)
    with KVEventPublisher(endpoint=endpoints[0], bind=True,
                          replay_endpoint=endpoints[1]) as second:
        assert (second.endpoint, second.replay_endpoint) == endpoints


def test_an_endpoint_in_use_is_a_config_error_without_leaks() -> None:
    before = len(replay_threads())
    with publisher() as pub:
        with pytest.raises(ConfigError):
            KVEventPublisher(endpoint=pub.endpoint, bind=True)
        with pytest.raises(ConfigError):
            KVEventPublisher(endpoint=LOOPBACK, bind=True, replay_endpoint=pub.replay_endpoint)
        assert len(replay_threads()) == before + 2
    assert len(replay_threads()) == before


def test_republish_all_sends_every_resident_page_parents_first_in_chunks() -> None:
    cache = make_cache(page_size=2, capacity=64)
    prompts = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 9, 9], [1, 2, 7, 7], [5, 5]]
    for prompt in prompts:
        insert(cache, prompt)
    insert(cache, [1, 2, 3, 4], ("lora-c", None))
    with publisher(republish_chunk=2) as pub:
        pub.publish(cache)
        insert(cache, [8, 8, 8, 8])  # pending: the snapshot includes it, not twice
        seqs = pub.republish_all(cache)
        batches = kept(pub)[-len(seqs):]
    assert batches[0] == [{"type": "AllBlocksCleared"}]
    assert all(1 <= len(b) <= 2 for b in batches[1:])
    announced: set[int] = set()
    tokens: list[list[int]] = []
    for event in (e for b in batches[1:] for e in b):
        parent = event["parent_block_hash"]
        assert parent is None or parent in announced
        announced.update(event["block_hashes"])
        tokens.append(event["token_ids"])
    assert len(announced) == 10  # pages: 12 34 56 | 99 | 77 | 55 | 88 88 | lora 12 34
    assert sorted(map(tuple, tokens)) == sorted(
        map(tuple, [[1, 2], [3, 4], [5, 6], [9, 9], [7, 7], [5, 5], [8, 8, 8, 8],
                    [1, 2, 3, 4]]))
    assert cache.take_events() == []


def test_only_the_full_component_publishes_in_a_hybrid_cache() -> None:
    cache = make_cache(page_size=2, capacity=64, components=("full", "swa"), sliding_window=4)
    with publisher() as pub:
        insert(cache, list(range(12)))
        insert(cache, [*range(8), 50, 51, 52, 53])
        assert len(pub.publish(cache)) == 1
        # a leaf that loses its window is removed whole: its FULL pages go, and are announced
        assert cache.evict(swa=4) == {"full": 4, "swa": 4}
        assert len(pub.publish(cache)) == 1
        # an inner node tombstoned (FULL kept): nothing for routers
        assert cache.evict(swa=4) == {"full": 0, "swa": 8}
        assert pub.publish(cache) == []
        batches = kept(pub)
        assert [[e["type"] for e in b] for b in batches[1:]] == [
            ["BlockStored", "BlockStored"], ["BlockRemoved"]]
        assert all(list(e) == ["type", "block_hashes", "parent_block_hash", "token_ids",
                               "block_size", "lora_id", "medium", "lora_name"]
                   for e in batches[1])
