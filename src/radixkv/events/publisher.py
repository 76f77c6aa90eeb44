"""KVEventPublisher: a cache's KV events on the vLLM ZMQ wire, with replay.

Every message is three frames: the topic, the batch sequence number (8 bytes big-endian,
from 0, one per batch) and a msgpack ``[ts, [events...], dp_rank]`` payload. The first batch
after start-up is AllBlocksCleared, and so is the first after the cache's ``reset()``.

Threads: :meth:`KVEventPublisher.publish` runs on the scheduler thread and only drains the
cache and numbers the batches; encoding, keeping for replay and sending happen on the
publisher's own thread (``radixkv-events``), so a huge batch never stalls the scheduler.
That thread also sends the heartbeats, and replay is served on a third (``radixkv-replay``).
Publishing never blocks and never raises into the caller because of the network: a failed
send is counted in ``stats()["send_errors"]`` and logged once; the batch keeps its sequence
number and stays available to replay, so a router that notices the gap can recover it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, ClassVar

import zmq

from ..cache.prefix_cache import PrefixCache
from ..core.events import AllBlocksCleared, BlockRemoved, BlockStored, KVEvent, has_pages
from ..errors import ConfigError, InvalidArgumentTypeError, PublisherClosedError
from .publisher_config import PublisherConfig
from .replay import ReplayBuffer, ReplayServer
from .sender import BatchSender
from .snapshot import resident_pages

log = logging.getLogger("radixkv.events")

_EVENT_TYPES = (BlockStored, BlockRemoved, AllBlocksCleared)


class KVEventPublisher:
    """Publishes a :class:`~radixkv.PrefixCache`'s KV events (``CacheConfig(events=True)``).

    Call :meth:`publish` once per scheduler step, from the thread that drives the cache. Use
    as a context manager or call :meth:`close`; every publishing call afterwards raises
    :class:`~radixkv.errors.PublisherClosedError`. Keyword arguments build a
    :class:`PublisherConfig` when ``config`` is not given.
    """

    clears_at_start: ClassVar[bool] = True
    """Whether the first batch is AllBlocksCleared (a stream whose pages outlive the
    publisher, like the shared store's, must not tell routers to forget them)."""

    def __init__(self, config: PublisherConfig | None = None, **options: Any) -> None:
        if config is None:
            config = PublisherConfig(**options)
        elif options:
            raise ConfigError("give either a PublisherConfig or keyword options, not both")
        elif not isinstance(config, PublisherConfig):
            raise InvalidArgumentTypeError(f"config must be a PublisherConfig, got {config!r}")
        self.config = config
        self.cache_dropped = 0
        self.resyncs = 0
        self._closed = True
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self._replay: ReplayServer | None = None
        self._buffer: ReplayBuffer | None = None
        socket = self._context.socket(zmq.PUB)
        try:
            self.endpoint = self._open_pub(socket)
            router = config.router_endpoint()
            if router is not None:
                self._buffer = ReplayBuffer(config.buffer_steps)
                self._replay = ReplayServer(
                    self._context, router, config.topic.encode(), self._buffer,
                    2 * (config.buffer_steps + 1),
                )
        except zmq.ZMQError as exc:
            socket.close()
            self._context.term()
            raise ConfigError(f"cannot open KV event sockets: {exc}") from exc
        self._sender = BatchSender(socket, config, self._buffer)
        self._closed = False
        if self.clears_at_start:
            self.publish_events([AllBlocksCleared()])

    def _open_pub(self, sock: zmq.Socket[bytes]) -> str:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, self.config.hwm)
        endpoint = self.config.pub_endpoint()
        if self.config.binds():
            sock.bind(endpoint)
            return sock.getsockopt_string(zmq.LAST_ENDPOINT)
        _warn_connecting(endpoint, explicit=self.config.bind is False)
        sock.connect(endpoint)
        return endpoint

    # ------------------------------------------------------------------ properties

    @property
    def replay_endpoint(self) -> str | None:
        """The bound replay endpoint (the real port when 0 was asked), or ``None``."""
        return None if self._replay is None else self._replay.endpoint

    @property
    def next_sequence(self) -> int:
        """The sequence number the next batch (or heartbeat) will carry."""
        return self._sender.next_sequence

    @property
    def closed(self) -> bool:
        return self._closed

    def stats(self) -> dict[str, int]:
        """Counters (safe from any thread): ``batches`` sent (heartbeats apart),
        ``heartbeats``, ``send_errors``, ``dropped_events`` (lost before the wire: by the
        cache's full event queue, a full send queue, or at close), ``resyncs`` (automatic
        :meth:`republish_all`), ``pending`` batches, ``sender_wakeups`` (times a publish
        woke the publisher's thread: it sends every batch queued when it wakes), and the
        replay server's ``replay_requests`` served, ``replay_bad_requests``,
        ``replay_lagged`` (requests from a router that lagged past the buffer) with
        ``replay_missed`` (the batches they asked for that were gone), ``replay_buffered``."""
        sender, replay = self._sender, self._replay
        return {
            "batches": sender.batches,
            "heartbeats": sender.heartbeats,
            "next_sequence": sender.next_sequence,
            "send_errors": sender.send_errors,
            "dropped_events": sender.dropped_events + self.cache_dropped,
            "resyncs": self.resyncs,
            "pending": sender.pending,
            "sender_wakeups": sender.wakeups,
            "replay_requests": 0 if replay is None else replay.requests,
            "replay_bad_requests": 0 if replay is None else replay.bad_requests,
            "replay_lagged": 0 if replay is None else replay.lagged,
            "replay_missed": 0 if replay is None else replay.missed,
            "replay_buffered": 0 if self._buffer is None else len(self._buffer),
        }

    # ------------------------------------------------------------------ publishing

    def publish(self, cache: PrefixCache) -> list[int]:
        """Drain ``cache.take_events()`` and publish them: one batch per scheduler step, or
        none when there are no events. Each AllBlocksCleared starts a new batch, so it is
        the first of the batches after a ``reset()``. When events were lost on the way and
        ``resync_on_drop`` is set, republishes everything instead (:meth:`republish_all`).
        Returns the sequence numbers used. Cost on this thread: O(1) (O(events) when a
        ``reset()`` queued an AllBlocksCleared), no encoding, and a wake-up of the
        publisher's thread only when it waits idle.
        Raises :class:`InvalidArgumentTypeError` for a non-cache, and
        :class:`PublisherClosedError` after :meth:`close`."""
        if self._closed or not isinstance(cache, PrefixCache):  # _check() inline
            self._check(cache)
        log = cache.tree.log
        dropped = log.dropped_since_take  # read before the drain resets it
        events = log.take()  # cache.take_events() without its two calls
        sender = self._sender
        if dropped or sender.lost:
            if dropped:
                self.cache_dropped += dropped
                self._warn_dropped(dropped)
            resync = sender.take_resync() or dropped > 0
            if resync and self.config.resync_on_drop:
                self.resyncs += 1
                return self.republish_all(cache)
        if not events:
            return []
        if AllBlocksCleared in map(type, events):  # after a reset(): split, as any events
            batches = _split(events)
            return sender.submit(batches, time.time()) if batches else []
        # the cache's own stores and removes: one batch, no per-event work on this thread
        # (the encoder leaves out any that carries no page; the tree queues none)
        return sender.submit((events,), time.time())

    def publish_events(self, events: Iterable[KVEvent], ts: float | None = None) -> list[int]:
        """Publish already-drained events as batches (split before each AllBlocksCleared);
        returns the sequence numbers used. Never raises for send failures; raises
        :class:`InvalidArgumentTypeError` for ``events`` that is no iterable of KV events
        and for a ``ts`` that is no number."""
        self._check_open()
        if isinstance(events, (str, bytes)) or not isinstance(events, Iterable):
            raise InvalidArgumentTypeError(f"events must be an iterable of KV events, got "
                                           f"{events!r:.80}")
        if ts is not None and (isinstance(ts, bool) or not isinstance(ts, (int, float))):
            raise InvalidArgumentTypeError(f"ts must be a number of seconds or None, got "
                                           f"{ts!r:.80}")
        batches = _split(events)
        if not batches:
            return []
        stamp = time.time() if ts is None else float(ts)
        return self._sender.submit(batches, stamp)

    def republish_all(self, cache: PrefixCache) -> list[int]:
        """For a router that lost state: AllBlocksCleared, then every resident FULL page,
        parents first (``republish_chunk`` events a batch). Events still queued in the
        cache are dropped first; the snapshot already reflects them. Cost on this thread:
        the O(nodes) walk (and a page hash per page not hashed yet); encoding is on the
        publisher's thread. These batches bypass ``queue_batches`` (a snapshot is bounded by
        the cache's capacity). Returns the sequence numbers used."""
        self._check(cache)
        cache.take_events()
        chunk = self.config.republish_chunk
        batches: list[list[KVEvent]] = [[AllBlocksCleared()], []]
        for event in resident_pages(cache):
            if len(batches[-1]) >= chunk:
                batches.append([])
            batches[-1].append(event)
        if not batches[-1]:
            batches.pop()
        return self._sender.submit(batches, time.time(), bounded=False)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every batch published so far was handed to the socket (and kept for
        replay); False when ``timeout`` seconds passed first. Does not raise."""
        return self._sender.flush(timeout)

    def _check(self, cache: object) -> None:
        self._check_open()
        if not isinstance(cache, PrefixCache):
            raise InvalidArgumentTypeError(f"expected a PrefixCache, got {cache!r:.80}")

    def _check_open(self) -> None:
        if self._closed:
            raise PublisherClosedError("the KV event publisher is closed")

    def _warn_dropped(self, dropped: int) -> None:
        if self.cache_dropped == dropped:  # the first time only
            log.warning("KV event publisher: the cache's event queue overflowed (%d events "
                        "dropped; raise CacheConfig.event_queue_limit or publish more often); "
                        "%s", dropped, "republishing everything" if self.config.resync_on_drop
                        else "call republish_all() to resync routers")

    # ------------------------------------------------------------------ life-cycle

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (for up to ``timeout`` seconds), stop the threads and close
        every socket; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._sender.stop(timeout)
        if self._replay is not None:
            self._replay.close()
        self._sender.socket.close()
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


def _warn_connecting(endpoint: str, explicit: bool) -> None:
    """Say that this publisher connects: only a consumer that binds receives anything, and
    the usual routers connect too (two connecting ends never meet and ZMQ reports nothing).
    A WARNING when vLLM's rule chose it (a concrete address), INFO when ``bind=False``
    asked for it."""
    log.log(logging.INFO if explicit else logging.WARNING,
            "KV event publisher connects to %s%s: only a consumer that binds there (a "
            "central collector, llm-d's centralized mode) receives its events. NVIDIA "
            "Dynamo's indexer, llm-d's pod-discovery mode and vllm-router's event source "
            "connect to the engine themselves: with them nobody binds, no event arrives and "
            "KV-aware routing silently degrades. Bind instead (tcp://*:PORT, or bind=True "
            "for one address)%s.", endpoint,
            " (bind=False)" if explicit else " (vLLM's rule: an endpoint without '*' or '::' "
            "connects)", "" if explicit else ", or pass bind=False if a collector binds there")


def _split(events: Iterable[KVEvent]) -> list[Sequence[KVEvent]]:
    """Group events into batches, each AllBlocksCleared starting a new one; stores and
    removes that carry no page are dropped. Raises for an item that is not a KV event."""
    batches: list[Sequence[KVEvent]] = []
    current: list[KVEvent] = []
    for event in events:
        if isinstance(event, AllBlocksCleared):
            if current:
                batches.append(current)
            current = [event]
        elif not isinstance(event, _EVENT_TYPES):
            raise InvalidArgumentTypeError(f"not a KV event: {event!r:.80}")
        elif has_pages(event):  # a pending BlockStored stays so (encoded on the sender)
            current.append(event)
    if current:
        batches.append(current)
    return batches
