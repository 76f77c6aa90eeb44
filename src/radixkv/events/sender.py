"""BatchSender: a publisher's batches encoded, kept for replay and sent on its own thread.

Encoding a large batch (a ``republish_all`` of a big tree, a burst of evictions) takes
milliseconds to seconds of msgpack work; doing it here keeps it off the scheduler thread,
whose :meth:`BatchSender.submit` only numbers the batches and queues them.

The two threads share one interpreter lock, and each hand-over of it stops the scheduler
for a wake-up and a cache-cold restart. Woken by every publish, the thread took the lock
once a step: with a live publisher admit + finish + publish had a median step 1.4 times
(page 16) and 1.8 times (page 1) that of events off, ``radixkv bench events``, 2026-12-04.
So the thread is woken only when it waits with nothing to do; once awake it takes every
batch queued, encodes, keeps and sends them in one round, and lingers before the next
(:data:`LINGER`): in a busy loop, one hand-over per few hundred batches.
"""

from __future__ import annotations

import logging
import math
import struct
import threading
import time
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

import zmq

from ..core.events import KVEvent
from ..errors import PublisherClosedError
from .publisher_config import PublisherConfig
from .replay import ReplayBuffer
from .wire import BatchEncoder

log = logging.getLogger("radixkv.events")

LINGER = 0.005
"""Seconds the thread waits after a round before it takes the next batches: a busy
scheduler's batches of that time go out in one round, one hand-over of the lock (the
interpreter's switch interval is 5 ms too). :meth:`BatchSender.flush`,
:meth:`BatchSender.stop` and a half-full queue cut it short; an idle thread is woken at
once."""

_Item = tuple[int, float, Sequence[KVEvent]]
_MORE = zmq.SNDMORE | zmq.NOBLOCK
_SEQUENCE = struct.Struct(">Q").pack
""":func:`~radixkv.events.wire.sequence_frame` without its Python call."""


def frame_sender(sock: Any) -> Callable[[bytes, bytes, bytes], object]:
    """A function sending one three-frame message on ``sock`` without blocking: through
    pyzmq's backend for a pyzmq socket (its Python layer's checks cost 0.4 µs a frame a PUB
    socket does not need), through ``send_multipart`` for anything else."""
    if type(sock) is zmq.Socket:
        send = zmq.backend.Socket.send

        def frames(topic: bytes, seq: bytes, payload: bytes) -> object:
            send(sock, topic, _MORE)
            send(sock, seq, _MORE)
            return send(sock, payload, zmq.NOBLOCK)

        return frames
    multipart = sock.send_multipart
    return lambda topic, seq, payload: multipart([topic, seq, payload], zmq.NOBLOCK)


class BatchSender:
    """Owns the PUB socket: only its thread (``radixkv-events``) encodes, buffers and sends.

    Counters (read from any thread): ``batches`` handed to the socket (heartbeats not
    included), ``heartbeats``, ``send_errors`` (failed sends and batches that could not be
    encoded, which go out empty under their number), ``dropped_events`` (events of batches
    refused because ``queue_batches`` were waiting), ``wakeups`` (times the thread was
    woken for new batches).
    """

    def __init__(self, socket: zmq.Socket[bytes], config: PublisherConfig,
                 buffer: ReplayBuffer | None) -> None:
        self.socket = socket
        self.batches = 0
        self.heartbeats = 0
        self.send_errors = 0
        self.dropped_events = 0
        self.wakeups = 0
        self._config = config
        self._topic = config.topic.encode()
        self._encoder = BatchEncoder(config)
        self._buffer = buffer
        lock = threading.Lock()
        self._lock = lock
        self._work = threading.Condition(lock)
        """The thread waits on it for batches; :meth:`submit` wakes it when it is idle."""
        self._done = threading.Condition(lock)
        """:meth:`flush` waits on it; the thread notifies it after each round of sends."""
        self._queue: list[_Item] = []
        self._next_seq = 0
        self._busy = 0
        """Batches the thread took and has not sent yet."""
        self._wake_len: float = math.inf
        """The queue length at which :meth:`submit` wakes the thread: 1 while it waits
        idle, half of ``queue_batches`` while it lingers after a round, never while it
        sends."""
        self._half = max(1, config.queue_batches // 2)
        self._limit = config.queue_batches
        self._flushing = 0
        """Threads in :meth:`flush`: the thread does not linger meanwhile."""
        self._stopping = False
        self.lost = False
        """Whether events were lost on the way since the last :meth:`take_resync` (which
        clears it; a plain read needs no lock)."""
        self._last = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="radixkv-events", daemon=True)
        self._thread.start()

    @property
    def next_sequence(self) -> int:
        return self._next_seq

    @property
    def pending(self) -> int:
        """Batches queued and not yet sent."""
        return len(self._queue) + self._busy

    def submit(self, batches: Sequence[Sequence[KVEvent]], stamp: float,
               bounded: bool = True) -> list[int]:
        """Number and queue ``batches``; returns their sequence numbers. O(batches), no
        encoding, and no wake-up of the thread unless it waits idle. When ``bounded`` and
        they do not fit in ``queue_batches``, none is queued: their events are counted as
        dropped and a resync is requested. Raises :class:`PublisherClosedError` once
        :meth:`stop` began."""
        count = len(batches)
        with self._lock:
            queue = self._queue
            if self._stopping or (bounded and len(queue) + count > self._limit):
                return self._refuse(batches)
            first = self._next_seq
            self._next_seq = first + count
            if count == 1:
                queue.append((first, stamp, batches[0]))
            else:
                queue.extend(zip(range(first, first + count), repeat(stamp), batches))
            if len(queue) >= self._wake_len:
                self._wake()
        return [first] if count == 1 else list(range(first, first + count))

    def _refuse(self, batches: Sequence[Sequence[KVEvent]]) -> list[int]:
        """Raise once stopping, else drop ``batches`` (counted) and ask for a resync."""
        if self._stopping:
            raise PublisherClosedError("the KV event publisher is closed")
        self.dropped_events += sum(len(batch) for batch in batches)
        self.lost = True
        return []

    def _wake(self) -> None:
        self._wake_len = math.inf
        self.wakeups += 1
        self._work.notify()

    def take_resync(self) -> bool:
        """Whether events were lost on the way since the last call (and forget it)."""
        with self._lock:
            wanted, self.lost = self.lost, False
            return wanted

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted batch was sent; False if ``timeout`` passed first."""
        with self._lock:
            self._flushing += 1
            self._work.notify()  # cuts a linger short
            try:
                return self._done.wait_for(lambda: not self._queue and not self._busy,
                                           timeout)
            finally:
                self._flushing -= 1

    def stop(self, timeout: float) -> None:
        """Send what is queued (for up to ``timeout`` seconds, the rest is dropped and
        counted), then end the thread. Idempotent."""
        self.flush(timeout)
        with self._lock:
            self._stopping = True
            self.dropped_events += sum(len(item[2]) for item in self._queue)
            self._queue.clear()
            self._work.notify()
        self._thread.join()

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        while True:
            with self._lock:
                items = self._take()
                if items is None:
                    return
            self._send_all(items)
            with self._lock:
                self._busy = 0
                self._last = time.monotonic()
                self._done.notify_all()
                self._linger()

    def _linger(self) -> None:
        """Wait :data:`LINGER` for more batches, unless told to hurry (lock held)."""
        if self._stopping or self._flushing:
            return
        self._wake_len = self._half
        self._work.wait(LINGER)
        self._wake_len = math.inf

    def _take(self) -> list[_Item] | None:
        """Every queued batch, a heartbeat once idle long enough, or None to stop (called
        and returns with the lock held)."""
        interval = self._config.heartbeat_interval
        while not self._queue:
            if self._stopping:
                return None
            self._wake_len = 1
            if interval is None:
                self._work.wait()
                continue
            remaining = self._last + interval - time.monotonic()
            if remaining <= 0:
                self._wake_len = math.inf
                seq = self._next_seq
                self._next_seq += 1
                self._busy = 1
                return [(seq, time.time(), ())]
            self._work.wait(remaining)
        self._wake_len = math.inf
        items, self._queue = self._queue, []
        self._busy = len(items)
        return items

    def _send_all(self, items: list[_Item]) -> None:
        """Encode every batch, keep them for replay (one lock), then send them in order."""
        payloads = [(seq, self._payload(stamp, events)) for seq, stamp, events in items]
        if self._buffer is not None:
            self._buffer.extend(payloads)
        send, topic = frame_sender(self.socket), self._topic
        for (seq, payload), (_, _, events) in zip(payloads, items):
            if events:
                self.batches += 1
            else:
                self.heartbeats += 1
            try:
                send(topic, _SEQUENCE(seq), payload)
            except Exception:
                self._failed("send", events)

    def _payload(self, stamp: float, events: Sequence[KVEvent]) -> bytes:
        dp_rank = self._config.dp_rank
        try:
            return self._encoder.batch(stamp, events, dp_rank)
        except Exception:
            self._failed("encoding", events)
            with self._lock:
                self.lost = True
            return self._encoder.batch(stamp, (), dp_rank)  # keeps the numbers contiguous

    def _failed(self, what: str, events: Sequence[KVEvent]) -> None:
        self.send_errors += 1
        if self.send_errors == 1:
            log.warning("KV event publisher: %s failed for a batch of %d events; the cache "
                        "goes on, further failures are only counted", what, len(events),
                        exc_info=True)
