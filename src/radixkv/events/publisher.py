"""KVEventPublisher: a cache's KV events on the vLLM ZMQ wire, with replay.

Every message is three frames: the topic, the batch sequence number (8 bytes big-endian,
from 0, one per batch) and a msgpack ``[ts, [events...], dp_rank]`` payload. The first batch
after start-up is AllBlocksCleared, and so is the first after the cache's ``reset()``.
Publishing never blocks and never raises into the caller: a failed send is counted in
:attr:`KVEventPublisher.send_errors` and logged once; the batch keeps its sequence number and
stays available to replay, so a router that notices the gap can recover it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import zmq

from ..core.events import AllBlocksCleared, BlockRemoved, BlockStored, KVEvent
from ..errors import ConfigError
from .config import PublisherConfig
from .replay import ReplayBuffer, ReplayServer
from .snapshot import resident_pages
from .wire import BatchEncoder, sequence_frame

if TYPE_CHECKING:
    from ..cache.prefix_cache import PrefixCache

log = logging.getLogger("radixkv.events")


class KVEventPublisher:
    """Publishes a :class:`~radixkv.PrefixCache`'s KV events (``CacheConfig(events=True)``).

    Call :meth:`publish` once per scheduler step, from the thread that drives the cache. The
    replay socket (when configured) is served on a background thread. Use as a context
    manager or call :meth:`close`. Keyword arguments build a :class:`PublisherConfig` when
    ``config`` is not given.
    """

    def __init__(self, config: PublisherConfig | None = None, **options: Any) -> None:
        if config is None:
            config = PublisherConfig(**options)
        elif options:
            raise ConfigError("give either a PublisherConfig or keyword options, not both")
        self.config = config
        self.send_errors = 0
        self.batches = 0
        self._next_seq = 0
        self._closed = False
        self._lock = threading.Lock()
        self._topic = config.topic.encode()
        self._encoder = BatchEncoder(config)
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self._replay: ReplayServer | None = None
        self._buffer: ReplayBuffer | None = None
        self._socket = self._context.socket(zmq.PUB)
        try:
            self.endpoint = self._open_pub()
            router = config.router_endpoint()
            if router is not None:
                self._buffer = ReplayBuffer(config.buffer_steps)
                self._replay = ReplayServer(
                    self._context, router, self._topic, self._buffer,
                    2 * (config.buffer_steps + 1),
                )
        except zmq.ZMQError as exc:
            self._socket.close()
            self._context.term()
            self._closed = True
            raise ConfigError(f"cannot open KV event sockets: {exc}") from exc
        self.publish_events([AllBlocksCleared()])

    def _open_pub(self) -> str:
        sock = self._socket
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, self.config.hwm)
        endpoint = self.config.pub_endpoint()
        if self.config.binds():
            sock.bind(endpoint)
            return sock.getsockopt_string(zmq.LAST_ENDPOINT)
        sock.connect(endpoint)
        return endpoint

    # ------------------------------------------------------------------ properties

    @property
    def replay_endpoint(self) -> str | None:
        """The bound replay endpoint (the real port when 0 was asked), or ``None``."""
        return None if self._replay is None else self._replay.endpoint

    @property
    def next_sequence(self) -> int:
        """The sequence number the next batch will carry."""
        return self._next_seq

    @property
    def closed(self) -> bool:
        return self._closed

    def stats(self) -> dict[str, int]:
        """Counters: batches published, send errors, replay requests served / ignored."""
        replay = self._replay
        return {
            "batches": self.batches,
            "next_sequence": self._next_seq,
            "send_errors": self.send_errors,
            "replay_requests": 0 if replay is None else replay.requests,
            "replay_bad_requests": 0 if replay is None else replay.bad_requests,
            "replay_buffered": 0 if self._buffer is None else len(self._buffer),
        }

    # ------------------------------------------------------------------ publishing

    def publish(self, cache: PrefixCache) -> list[int]:
        """Drain ``cache.take_events()`` and publish them: one batch per scheduler step, or
        none when there are no events. Each AllBlocksCleared starts a new batch, so it is
        the first of the batches after a ``reset()``. Returns the sequence numbers used.
        After :meth:`close` this does nothing (the events stay queued)."""
        if self._closed:
            return []
        return self.publish_events(cache.take_events())

    def publish_events(self, events: Iterable[KVEvent], ts: float | None = None) -> list[int]:
        """Publish already-drained events as batches (split before each AllBlocksCleared);
        returns the sequence numbers used. Never raises for send failures."""
        batches = _split(events)
        if not batches or self._closed:
            return []
        stamp = time.time() if ts is None else ts
        return [seq for batch in batches if (seq := self._send(batch, stamp)) is not None]

    def republish_all(self, cache: PrefixCache) -> list[int]:
        """For a router that lost state: AllBlocksCleared, then every resident FULL page,
        parents first (``republish_chunk`` events a batch). Events still queued in the
        cache are dropped first; the snapshot already reflects them. Returns the sequence
        numbers used."""
        if self._closed:
            return []
        cache.take_events()
        stamp = time.time()
        used = self.publish_events([AllBlocksCleared()], stamp)
        chunk: list[KVEvent] = []
        for event in resident_pages(cache):
            chunk.append(event)
            if len(chunk) >= self.config.republish_chunk:
                used += self.publish_events(chunk, stamp)
                chunk = []
        used += self.publish_events(chunk, stamp)
        return used

    def _send(self, events: Sequence[KVEvent], stamp: float) -> int | None:
        with self._lock:
            if self._closed:
                return None
            try:
                payload = self._encoder.batch(stamp, events, self.config.dp_rank)
            except Exception:
                self._failed("encode", events)
                return None
            seq = self._next_seq
            self._next_seq += 1
            if self._buffer is not None:
                self._buffer.append(seq, payload)
            self.batches += 1
            try:
                self._socket.send_multipart(
                    [self._topic, sequence_frame(seq), payload], zmq.NOBLOCK
                )
            except Exception:
                self._failed("send", events)
            return seq

    def _failed(self, what: str, events: Sequence[KVEvent]) -> None:
        self.send_errors += 1
        if self.send_errors == 1:
            log.warning("KV event publisher: %s failed for a batch of %d events; the cache "
                        "goes on, further failures are only counted", what, len(events),
                        exc_info=True)

    # ------------------------------------------------------------------ life-cycle

    def close(self) -> None:
        """Stop the replay thread and close every socket; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._replay is not None:
                self._replay.close()
            self._socket.close()
            self._context.term()

    def __enter__(self) -> KVEventPublisher:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort when not closed
        if not getattr(self, "_closed", True):
            with contextlib.suppress(Exception):
                self.close()


def _split(events: Iterable[KVEvent]) -> list[list[KVEvent]]:
    """Group events into batches, each AllBlocksCleared starting a new one; stores and
    removes that carry no page are dropped."""
    batches: list[list[KVEvent]] = []
    current: list[KVEvent] = []
    for event in events:
        if isinstance(event, AllBlocksCleared):
            if current:
                batches.append(current)
            current = [event]
        elif isinstance(event, (BlockStored, BlockRemoved)) and not event.block_hashes:
            continue
        else:
            current.append(event)
    if current:
        batches.append(current)
    return batches
