"""BatchSender: a publisher's batches encoded, kept for replay and sent on its own thread.

Encoding a large batch (a ``republish_all`` of a big tree, a burst of evictions) takes
milliseconds to seconds of msgpack work; doing it here keeps it off the scheduler thread,
whose :meth:`BatchSender.submit` only numbers the batches and queues them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence

import zmq

from ..core.events import KVEvent
from ..errors import PublisherClosedError
from .publisher_config import PublisherConfig
from .replay import ReplayBuffer
from .wire import BatchEncoder, sequence_frame

log = logging.getLogger("radixkv.events")

_Item = tuple[int, float, Sequence[KVEvent]]


class BatchSender:
    """Owns the PUB socket: only its thread (``radixkv-events``) encodes, buffers and sends.

    Counters (read from any thread): ``batches`` handed to the socket (heartbeats not
    included), ``heartbeats``, ``send_errors`` (failed sends and batches that could not be
    encoded, which go out empty under their number), ``dropped_events`` (events of batches
    refused because ``queue_batches`` were waiting).
    """

    def __init__(self, socket: zmq.Socket[bytes], config: PublisherConfig,
                 buffer: ReplayBuffer | None) -> None:
        self.socket = socket
        self.batches = 0
        self.heartbeats = 0
        self.send_errors = 0
        self.dropped_events = 0
        self._config = config
        self._topic = config.topic.encode()
        self._encoder = BatchEncoder(config)
        self._buffer = buffer
        self._cond = threading.Condition()
        self._queue: deque[_Item] = deque()
        self._next_seq = 0
        self._busy = False
        self._stopping = False
        self._resync = False
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
        """Number and queue ``batches``; returns their sequence numbers. O(batches). When
        ``bounded`` and they do not fit in ``queue_batches``, none is queued: their events
        are counted as dropped and a resync is requested. Raises
        :class:`PublisherClosedError` once :meth:`stop` began."""
        with self._cond:
            if self._stopping:
                raise PublisherClosedError("the KV event publisher is closed")
            if bounded and len(self._queue) + len(batches) > self._config.queue_batches:
                self.dropped_events += sum(len(batch) for batch in batches)
                self._resync = True
                return []
            first = self._next_seq
            self._next_seq += len(batches)
            self._queue.extend((first + i, stamp, batch) for i, batch in enumerate(batches))
            self._cond.notify_all()
            return list(range(first, self._next_seq))

    def take_resync(self) -> bool:
        """Whether events were lost on the way since the last call (and forget it)."""
        with self._cond:
            wanted, self._resync = self._resync, False
            return wanted

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted batch was sent; False if ``timeout`` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._busy, timeout)

    def stop(self, timeout: float) -> None:
        """Send what is queued (for up to ``timeout`` seconds, the rest is dropped and
        counted), then end the thread. Idempotent."""
        self.flush(timeout)
        with self._cond:
            self._stopping = True
            self.dropped_events += sum(len(item[2]) for item in self._queue)
            self._queue.clear()
            self._cond.notify_all()
        self._thread.join()

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        while True:
            with self._cond:
                item = self._next_item()
                if item is None:
                    return
                self._busy = True
            self._send(*item)
            with self._cond:
                self._busy = False
                self._last = time.monotonic()
                self._cond.notify_all()

    def _next_item(self) -> _Item | None:
        """The next batch to send, a heartbeat once idle long enough, or None to stop."""
        interval = self._config.heartbeat_interval
        while not self._queue:
            if self._stopping:
                return None
            if interval is None:
                self._cond.wait()
                continue
            remaining = self._last + interval - time.monotonic()
            if remaining <= 0:
                seq = self._next_seq
                self._next_seq += 1
                return (seq, time.time(), ())
            self._cond.wait(remaining)
        return self._queue.popleft()

    def _send(self, seq: int, stamp: float, events: Sequence[KVEvent]) -> None:
        dp_rank = self._config.dp_rank
        try:
            payload = self._encoder.batch(stamp, events, dp_rank)
        except Exception:
            self._failed("encoding", events)
            with self._cond:
                self._resync = True
            payload = self._encoder.batch(stamp, (), dp_rank)  # keeps the numbers contiguous
        if self._buffer is not None:
            self._buffer.append(seq, payload)
        if events:
            self.batches += 1
        else:
            self.heartbeats += 1
        try:
            self.socket.send_multipart([self._topic, sequence_frame(seq), payload], zmq.NOBLOCK)
        except Exception:
            self._failed("send", events)

    def _failed(self, what: str, events: Sequence[KVEvent]) -> None:
        self.send_errors += 1
        if self.send_errors == 1:
            log.warning("KV event publisher: %s failed for a batch of %d events; the cache "
                        "goes on, further failures are only counted", what, len(events),
                        exc_info=True)
