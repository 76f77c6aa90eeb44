"""(b) The replay protocol, with a DEALER client: ``[b"", start_seq]`` in, every buffered
batch from ``start_seq`` as ``[b"", topic, seq, payload]`` out, then the end marker
``[b"", b"", 0xff * 8, b""]``."""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator

import pytest

zmq = pytest.importorskip("zmq", reason="pyzmq is not installed (pip install -e '.[events]')")
msgpack = pytest.importorskip(
    "msgpack", reason="msgpack is not installed (pip install -e '.[events]')")

from radixkv.events import KVEventPublisher  # noqa: E402

from .support import LOOPBACK, insert, make_cache, publisher  # noqa: E402

END = [b"", b"", b"\xff" * 8, b""]
TOPIC = b"kv@pod-1@model"


@pytest.fixture
def context() -> Iterator[zmq.Context]:
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def dealer(context: zmq.Context, endpoint: str) -> zmq.Socket:
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    return sock


def replay(sock: zmq.Socket, start: int, timeout_ms: int = 5000) -> list[list[bytes]]:
    """Ask for a replay from ``start``; every reply message, up to and with the end marker."""
    sock.send_multipart([b"", struct.pack(">Q", start)])
    replies = []
    while True:
        assert sock.poll(timeout_ms), f"no end marker; got {len(replies)} replies"
        frames = sock.recv_multipart()
        replies.append(frames)
        if frames[2:3] == [b"\xff" * 8]:
            return replies


def publish_steps(pub: KVEventPublisher, steps: int) -> list[int]:
    """``steps`` scheduler steps that each store one new page: one batch each."""
    cache = make_cache(page_size=2)
    seqs = [seq for i in range(steps) for seq in (insert(cache, [i, i + 1]) and pub.publish(cache))]
    assert pub.flush(10)  # sent on the publisher's thread: wait until replay has them
    return seqs


def test_replay_sends_every_batch_from_the_start_then_the_end_marker(
    context: zmq.Context,
) -> None:
    with publisher(topic=TOPIC.decode()) as pub:
        assert publish_steps(pub, 5) == [1, 2, 3, 4, 5]  # 0 was the start-up AllBlocksCleared
        client = dealer(context, pub.replay_endpoint or "")
        replies = replay(client, 2)
        assert replies[-1] == END
        body = replies[:-1]
        assert [len(frames) for frames in body] == [4] * 4
        assert [frames[0] for frames in body] == [b""] * 4
        assert [frames[1] for frames in body] == [TOPIC] * 4
        assert [struct.unpack(">Q", frames[2])[0] for frames in body] == [2, 3, 4, 5]
        for frames in body:
            ts, events, dp_rank = msgpack.unpackb(frames[3])
            assert isinstance(ts, float) and dp_rank == 0
            assert [event["type"] for event in events] == ["BlockStored"]
        # the same bytes every time: replay serves the encoded batches it kept
        everything = replay(client, 0)
        assert everything[2:-1] == body
        assert msgpack.unpackb(everything[0][3])[1] == [{"type": "AllBlocksCleared"}]
        assert replay(client, 6) == [END]  # nothing from a sequence not published yet
        assert pub.stats()["replay_requests"] == 3
        client.close()


def test_replay_keeps_only_the_last_buffer_steps_batches(context: zmq.Context) -> None:
    with publisher(buffer_steps=3) as pub:
        publish_steps(pub, 5)
        client = dealer(context, pub.replay_endpoint or "")
        replies = replay(client, 0)
        assert [struct.unpack(">Q", f[2])[0] for f in replies[:-1]] == [3, 4, 5]
        assert replies[-1] == END
        client.close()


def test_malformed_requests_are_ignored_and_the_server_keeps_serving(
    context: zmq.Context,
) -> None:
    with publisher() as pub:
        assert pub.flush(10)
        client = dealer(context, pub.replay_endpoint or "")
        client.send_multipart([b"", b"\x00\x00\x00\x00"])  # 4-byte sequence
        client.send_multipart([b"", b"", struct.pack(">Q", 0)])  # 4 frames at the ROUTER
        client.send(b"hello")  # 2 frames at the ROUTER
        replies = replay(client, 0)  # answered after the bad ones, which got nothing
        assert len(replies) == 2 and replies[-1] == END
        assert pub.stats()["replay_bad_requests"] == 3
        client.close()


def test_clients_get_their_own_replies_while_batches_are_published(
    context: zmq.Context,
) -> None:
    with publisher() as pub:
        assert pub.flush(10)  # the start-up batch (0) is kept for replay before the clients ask
        writer = threading.Thread(target=publish_steps, args=(pub, 200))
        clients = [dealer(context, pub.replay_endpoint or "") for _ in range(3)]
        writer.start()
        try:
            for _ in range(5):
                for client in clients:
                    replies = replay(client, 0)
                    seqs = [struct.unpack(">Q", f[2])[0] for f in replies[:-1]]
                    assert seqs == list(range(len(seqs))) and seqs  # contiguous from 0
                    assert replies[-1] == END
        finally:
            writer.join(30)
        assert pub.next_sequence == 201
        for client in clients:
            assert len(replay(client, 0)) == 202
            client.close()


def test_without_a_replay_endpoint_there_is_no_replay_thread() -> None:
    before = {t.name for t in threading.enumerate()}
    with KVEventPublisher(endpoint=LOOPBACK, bind=True) as pub:
        assert pub.replay_endpoint is None
        assert {t.name for t in threading.enumerate()} - before == {"radixkv-events"}
        assert pub.stats()["replay_buffered"] == 0
