"""What a storage backend counts: calls, pages, bytes, seconds and faults by kind."""

from __future__ import annotations

from dataclasses import dataclass, field

FAULTS = ("unavailable", "timeout", "corrupt", "missing", "full", "error")
"""Fault kinds: server unreachable, call timed out, object failed its length or checksum
check, page gone between ``exists`` and ``get`` (evicted or removed), store full (a put
refused), anything else the client raised."""


@dataclass(frozen=True)
class StorageStats:
    """A snapshot of a backend's counters (``StorageBackend.stats()``). ``faults`` maps each
    kind of :data:`FAULTS` to the pages it cost (a failed call costs each page it carried)."""

    exists_calls: int
    exists_pages: int
    """Leading pages found present, summed over ``exists_prefix`` calls."""
    get_pages: int
    get_hits: int
    put_pages: int
    put_stored: int
    removed_pages: int
    """Keys that ``remove`` calls reaching the store asked to drop (present or not)."""
    purged_pages: int
    """Keys a read found bad (``corrupt``) or gone (``missing``: a marker without its
    object) and deleted at once, so that no engine reads them again."""
    read_bytes: int
    written_bytes: int
    read_seconds: float
    write_seconds: float
    exists_seconds: float
    faults: dict[str, int] = field(default_factory=dict)

    @property
    def total_faults(self) -> int:
        return sum(self.faults.values())


class StorageCounters:
    """The mutable counters behind :class:`StorageStats`; written by the one thread that
    runs the backend, read by any (plain int fields, read one after another)."""

    def __init__(self) -> None:
        self.exists_calls = self.exists_pages = 0
        self.get_pages = self.get_hits = self.put_pages = self.put_stored = 0
        self.removed_pages = self.purged_pages = self.read_bytes = self.written_bytes = 0
        self.read_seconds = self.write_seconds = self.exists_seconds = 0.0
        self.faults = dict.fromkeys(FAULTS, 0)

    def fault(self, kind: str, pages: int = 1) -> None:
        self.faults[kind] += pages

    def snapshot(self) -> StorageStats:
        return StorageStats(
            exists_calls=self.exists_calls, exists_pages=self.exists_pages,
            get_pages=self.get_pages, get_hits=self.get_hits, put_pages=self.put_pages,
            put_stored=self.put_stored, removed_pages=self.removed_pages,
            purged_pages=self.purged_pages,
            read_bytes=self.read_bytes, written_bytes=self.written_bytes,
            read_seconds=self.read_seconds, write_seconds=self.write_seconds,
            exists_seconds=self.exists_seconds, faults=dict(self.faults))
