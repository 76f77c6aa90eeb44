"""Replay: the last N encoded batches, served on a ZMQ ROUTER socket by a background thread.

Protocol (vLLM's): a client (a DEALER) sends ``[b"", start_seq]`` with an 8-byte big-endian
start sequence; the ROUTER sees ``[identity, b"", start_seq]``. The server answers, for every
buffered batch with ``seq >= start_seq`` in order, ``[identity, b"", topic, seq, payload]``,
then the end marker ``[identity, b"", b"", -1 as 8 signed big-endian bytes, b""]``. A request
of any other shape is counted, logged once and ignored.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import struct
import threading
from collections import deque

import zmq

from .wire import END_SEQUENCE, sequence_frame

log = logging.getLogger("radixkv.events")


class ReplayBuffer:
    """The last ``capacity`` ``(seq, payload)`` batches, in sequence order; thread-safe."""

    def __init__(self, capacity: int) -> None:
        self._items: deque[tuple[int, bytes]] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def append(self, seq: int, payload: bytes) -> None:
        """Keep batch ``seq`` (one more than the last one appended), dropping the oldest."""
        with self._lock:
            self._items.append((seq, payload))

    def extend(self, batches: list[tuple[int, bytes]]) -> None:
        """Keep ``batches`` (``(seq, payload)``, consecutive and following the last one
        kept) under one lock, dropping the oldest."""
        with self._lock:
            self._items.extend(batches)

    def since(self, start: int) -> list[tuple[int, bytes]]:
        """Every kept batch with ``seq >= start``, oldest first."""
        with self._lock:
            if not self._items:
                return []
            skip = max(0, min(start - self._items[0][0], len(self._items)))
            return list(itertools.islice(self._items, skip, None))

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


class ReplayServer:
    """A bound ROUTER socket answering replay requests on its own thread until
    :meth:`close`. The thread alone uses the socket; :meth:`close` wakes it through an
    inproc pair, so closing takes no polling delay."""

    def __init__(
        self, context: zmq.Context[zmq.Socket[bytes]], endpoint: str, topic: bytes,
        buffer: ReplayBuffer, hwm: int,
    ) -> None:
        self.topic = topic
        self.buffer = buffer
        self.requests = 0
        self.bad_requests = 0
        self.lagged = 0
        """Requests that started before the oldest batch kept: that router lagged past the
        buffer and got only part of what it asked for (it needs a republish_all)."""
        self.missed = 0
        """The batches those requests asked for and could not get, summed."""
        self.errors = 0
        self._logged_bad = False
        self._logged_lag = False
        wake_name = f"inproc://radixkv-replay-wake-{id(self)}"
        self._router = context.socket(zmq.ROUTER)
        self._wake_rx = context.socket(zmq.PAIR)
        self._wake_tx = context.socket(zmq.PAIR)
        sockets = (self._router, self._wake_rx, self._wake_tx)
        try:
            for sock in sockets:
                sock.setsockopt(zmq.LINGER, 0)
            self._router.setsockopt(zmq.SNDHWM, hwm)
            self._router.bind(endpoint)
            self._wake_rx.bind(wake_name)
            self._wake_tx.connect(wake_name)
        except zmq.ZMQError:
            for sock in sockets:
                sock.close()
            raise
        self.endpoint = self._router.getsockopt_string(zmq.LAST_ENDPOINT)
        self._thread = threading.Thread(target=self._run, name="radixkv-replay", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread and close the sockets; idempotent."""
        if self._wake_tx.closed:
            return
        with contextlib.suppress(zmq.ZMQError):  # one message never fills the pair
            self._wake_tx.send(b"", zmq.NOBLOCK)
        self._thread.join()
        self._wake_tx.close()

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._wake_rx, zmq.POLLIN)
        try:
            while True:
                ready = dict(poller.poll())
                if self._wake_rx in ready:
                    return
                if self._router in ready:
                    self._drain()
        except zmq.ZMQError as exc:  # context terminated under us: nothing left to serve
            self.errors += 1
            log.warning("KV event replay server stopped: %s", exc)
        finally:
            self._router.close()
            self._wake_rx.close()

    def _lagged(self, missing: int) -> None:
        self.lagged += 1
        self.missed += missing
        if not self._logged_lag:
            self._logged_lag = True
            log.warning("a KV event router asked for %d batches that have left the replay "
                        "buffer (raise buffer_steps, or call republish_all()); further ones "
                        "are counted in stats()['replay_lagged'], not logged", missing)

    def _drain(self) -> None:
        while True:
            try:
                frames = self._router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            self._serve(frames)

    def _serve(self, frames: list[bytes]) -> None:
        if len(frames) != 3 or len(frames[2]) != 8:
            self.bad_requests += 1
            if not self._logged_bad:
                self._logged_bad = True
                log.warning("ignoring a KV event replay request of %d frames (expected "
                            "[identity, b'', 8-byte start sequence]); further ones are "
                            "counted, not logged", len(frames))
            return
        identity = frames[0]
        (start,) = struct.unpack(">Q", frames[2])
        self.requests += 1
        kept = self.buffer.since(start)
        if kept and start < kept[0][0]:
            self._lagged(kept[0][0] - start)
        send = self._router.send_multipart
        try:
            for seq, payload in kept:
                send([identity, b"", self.topic, sequence_frame(seq), payload], zmq.NOBLOCK)
            send([identity, b"", b"", END_SEQUENCE, b""], zmq.NOBLOCK)
        except zmq.Again:  # pragma: no cover - ROUTER drops rather than blocks
            self.errors += 1
