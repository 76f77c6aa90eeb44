"""A router-like KV-event subscriber, run as its own process by the events tests.

Usage: ``python subscriber.py ENDPOINT REPLAY_ENDPOINT TOPIC TIMEOUT``. It connects a SUB
(filtered on TOPIC) and a DEALER, prints ``READY``, then decodes every message against
:mod:`wire_schema`. When a live batch skips ahead of the next expected sequence number (the
publisher's first batch is always sent before anyone can subscribe), it asks for a replay
from that number and reads up to the end marker, as Dynamo's indexer does. It stops once a
line ``N`` on stdin says how many batches there are and it has batches 0..N-1, or after
TIMEOUT seconds, and prints one JSON report on stdout.
"""

from __future__ import annotations

import json
import struct
import sys
import time
from typing import Any

import zmq
from wire_schema import END_SEQ, Mirror, decode_batch


class Subscriber:
    def __init__(self, endpoint: str, replay: str, topic: str) -> None:
        self.context = zmq.Context()
        self.sub = self.context.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self.sub.connect(endpoint)
        self.dealer = self.context.socket(zmq.DEALER)
        self.dealer.setsockopt(zmq.LINGER, 0)
        self.dealer.connect(replay)
        self.topic = topic.encode()
        self.expected = 0
        self.mirror = Mirror()
        self.errors: list[str] = []
        self.batches: list[dict[str, Any]] = []
        self.duplicates = 0
        self.replays = 0
        self.end_markers = 0

    def live(self, frames: list[bytes]) -> None:
        if len(frames) != 3:
            self.errors.append(f"live message has {len(frames)} frames, not 3")
            return
        topic, seq_frame, payload = frames
        if topic != self.topic:
            self.errors.append(f"topic {topic!r} != {self.topic!r}")
        if len(seq_frame) != 8:
            self.errors.append(f"sequence frame of {len(seq_frame)} bytes")
            return
        (seq,) = struct.unpack(">Q", seq_frame)
        if seq > self.expected:
            self.replay(self.expected, deadline=time.monotonic() + 5)
        if seq < self.expected:
            self.duplicates += 1  # already had it from a replay
            return
        if seq != self.expected:
            self.errors.append(f"live batch {seq} while {self.expected} is still missing")
        self.batch(seq, payload, "live")

    def replay(self, start: int, deadline: float) -> None:
        self.replays += 1
        self.dealer.send_multipart([b"", struct.pack(">Q", start)])
        while time.monotonic() < deadline:
            if not self.dealer.poll(100):
                continue
            frames = self.dealer.recv_multipart()
            if frames[:3] == [b"", b"", END_SEQ] and len(frames) == 4 and frames[3] == b"":
                self.end_markers += 1
                return
            if len(frames) != 4 or frames[0] != b"" or frames[1] != self.topic:
                self.errors.append(f"replayed message is not [b'', topic, seq, payload]: "
                                   f"{[f[:16] for f in frames]}")
                continue
            (seq,) = struct.unpack(">Q", frames[2])
            if seq != self.expected:
                self.errors.append(f"replay sent {seq}, expected {self.expected}")
            self.batch(seq, frames[3], "replay")
        self.errors.append("replay ended without the end marker")

    def batch(self, seq: int, payload: bytes, how: str) -> None:
        events, errors = decode_batch(payload)
        self.errors.extend(f"batch {seq}: {error}" for error in errors)
        for event in events:
            self.mirror.apply(event)
        self.batches.append({"seq": seq, "how": how, "events": events})
        self.expected = seq + 1

    def run(self, timeout: float) -> None:
        poller = zmq.Poller()
        poller.register(self.sub, zmq.POLLIN)
        poller.register(sys.stdin.fileno(), zmq.POLLIN)
        target = None
        deadline = time.monotonic() + timeout
        print("READY", flush=True)
        while time.monotonic() < deadline and (target is None or self.expected < target):
            ready = dict(poller.poll(50))
            if sys.stdin.fileno() in ready:
                line = sys.stdin.readline()
                if line.strip():
                    target = int(line)
            if self.sub in ready:
                self.live(self.sub.recv_multipart())
        if target is None or self.expected < target:
            self.errors.append(f"timed out with batches 0..{self.expected - 1} of {target}")

    def report(self) -> dict[str, Any]:
        return {
            "errors": self.errors + self.mirror.errors,
            "batches": self.batches,
            "held": sorted(self.mirror.held.items()),
            "duplicates": self.duplicates,
            "replays": self.replays,
            "end_markers": self.end_markers,
        }

    def close(self) -> None:
        self.sub.close()
        self.dealer.close()
        self.context.term()


def main() -> None:
    endpoint, replay, topic, timeout = sys.argv[1:5]
    subscriber = Subscriber(endpoint, replay, topic)
    try:
        subscriber.run(float(timeout))
        json.dump(subscriber.report(), sys.stdout)
        sys.stdout.flush()
    finally:
        subscriber.close()


if __name__ == "__main__":
    main()
