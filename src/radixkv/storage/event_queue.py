"""The queue of a storage tier's STORAGE events, bounded like the tree's device event queue.

Its rule is :class:`~radixkv.core.event_log.EventLog`'s, so a consumer treats both streams
alike: the event that would take the queue past ``limit`` discards the whole queue (a
stream with a hole in it misleads a router more than an empty one), every later event is
discarded too until the next :meth:`EventQueue.take`, and all of them are counted. A cache
built without events (``CacheConfig(events=False)``) has nobody to drain the queue: it
keeps nothing and counts nothing.
"""

from __future__ import annotations

from ..core.events import KVEvent


class EventQueue:
    """STORAGE events until taken: at most ``limit`` of them; ``limit=None`` keeps none."""

    __slots__ = ("_events", "dropped", "dropped_since_take", "limit")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.dropped = 0
        """Events discarded because the queue was full, since the tier was made."""
        self.dropped_since_take = 0
        """Events discarded since the last :meth:`take` (0: what it returns is complete)."""
        self._events: list[KVEvent] = []

    @property
    def enabled(self) -> bool:
        """Whether events are kept at all (someone drains them)."""
        return self.limit is not None

    def push(self, event: KVEvent) -> None:
        """Queue ``event``, or discard it (see the module) when the queue is full."""
        if self.limit is None:
            return
        if self.dropped_since_take:
            self.dropped += 1
            self.dropped_since_take += 1
        elif len(self._events) >= self.limit:
            count = len(self._events) + 1
            self.dropped += count
            self.dropped_since_take = count
            self._events = []
        else:
            self._events.append(event)

    def take(self) -> list[KVEvent]:
        """Every queued event, oldest first, forgotten here; resets
        :attr:`dropped_since_take`."""
        events, self._events = self._events, []
        self.dropped_since_take = 0
        return events

    def __len__(self) -> int:
        return len(self._events)
