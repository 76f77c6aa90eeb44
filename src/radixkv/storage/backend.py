"""StorageBackend: the interface every L3 store implements, and the rules they all share.

The public calls validate their arguments first (the caller's bugs raise, and nothing is
sent: :class:`~radixkv.errors.InvalidArgumentError` for keys that are not a sequence of
1-200 characters of ``[A-Za-z0-9_.:-]`` or a rows batch of another length,
:class:`~radixkv.errors.InvalidSlotsError` for a read-only buffer given to ``get_into``),
then talk to the store in batches of at most
:attr:`StorageBackend.max_batch` pages, one round trip each. Every failure of the store
itself (server down, killed, timed out, full, an object missing or failing its checksum) is
a *fault*: it is counted in :meth:`stats` by kind and reads as a miss (``False`` / a shorter
prefix); it never raises. The raw calls a store implements are untrusted: whatever they
raise or answer (:mod:`.answers` checks every answer) is a fault, never an exception or a
page served. An object that fails its check, and a key the store listed whose object is
gone, is deleted once detected (``purged_pages``), so no engine reads it again. A backend
serves one thread at a time (a :class:`StorageWorker`'s, normally); :meth:`stats` may be
called from any thread.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from ..errors import InvalidArgumentError
from .answers import Blob, fault_kind, objects, presence, read_item, write_outcome
from .backend_stats import StorageCounters, StorageStats
from .framing import HEADER_BYTES, frame, unframe
from .rows import PageRows

_KEY = re.compile(r"[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,199}")
_T = TypeVar("_T")


class StorageFault(Exception):
    """Raised inside a backend's raw calls to name the fault kind of a failure."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


class StorageBackend(ABC):
    """A shared page store. Subclasses implement the five raw ``_`` calls on framed objects
    and :meth:`_classify`; the public calls below are the contract.

    After an ``unavailable`` or ``timeout`` fault the backend stops calling the store for
    ``retry_after_s`` seconds of ``clock`` (those calls are counted ``unavailable`` at once,
    without a round trip), so a stalled or dead server costs the calls of one retry window
    at most one timeout, not one per batch. ``clock``: a callable returning seconds
    (``time.monotonic``; a test may give a fake one)."""

    max_batch = 128
    """Pages per round trip to the store."""

    def __init__(self, retry_after_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._counters = StorageCounters()
        self._retry_after_s = retry_after_s
        self._clock = clock
        self._down_until: float | None = None

    # -- the contract ------------------------------------------------------------------

    def exists_prefix(self, keys: Sequence[str]) -> int:
        """How many leading ``keys`` the store holds; mutates nothing (a store may refresh
        recency). Cost: one round trip per batch, stopping at the first batch with a gap.
        A fault ends the count where it happened."""
        keys = checked_keys(keys)
        self._counters.exists_calls += 1
        found = 0
        for chunk in self._chunks(keys):
            present = self._guarded(self._exists, chunk, "exists_seconds", presence)
            leading = _leading(present) if present is not None else 0
            found += leading
            if leading < len(chunk):
                break
        self._counters.exists_pages += found
        return found

    def exists(self, keys: Sequence[str]) -> list[bool]:
        """Whether the store holds each of ``keys``; mutates nothing. Cost: one round trip
        per batch; a fault reads as absent for its batch (later batches are still asked)."""
        keys = checked_keys(keys)
        self._counters.exists_calls += 1
        flags: list[bool] = []
        for chunk in self._chunks(keys):
            present = self._guarded(self._exists, chunk, "exists_seconds", presence)
            flags.extend(present if present is not None else [False] * len(chunk))
        return flags

    def get_into(self, keys: Sequence[str], rows: PageRows) -> list[bool]:
        """Copy page ``i`` of ``keys`` into ``rows``' page ``i``; flag ``i`` says it arrived
        whole and checked. Rows of pages that did not arrive are left untouched. Cost: one
        round trip per batch and one checksum per page; after a failed batch the rest of the
        call is not tried (their flags are ``False``). Objects that failed their check, and
        keys whose object is gone, are deleted (one more round trip per batch that had
        some)."""
        keys = checked_keys(keys)
        rows.check_keys(len(keys), writing=True)
        flags = [False] * len(keys)
        size = HEADER_BYTES + rows.page_bytes
        self._counters.get_pages += len(keys)
        for start, chunk in self._starts(keys):
            blobs = self._guarded(lambda ks: self._read(ks, size), chunk, "read_seconds",
                                  objects)
            if blobs is None:
                break
            bad = []
            for offset, (key, item) in enumerate(zip(chunk, blobs)):
                fault = self._accept(key, read_item(item), rows, start + offset)
                flags[start + offset] = fault is None
                if fault in ("corrupt", "missing"):
                    bad.append(key)
            self._purge(bad)
        return flags

    def put_from(self, keys: Sequence[str], rows: PageRows) -> list[bool]:
        """Store ``rows``' page ``i`` under ``keys[i]``; flag ``i`` says the store took it
        (readers then see it whole or not at all). A key names its bytes: storing other
        bytes under a key already present may keep either object. The rows must not change
        until the call returns. Cost: one copy and checksum per page, one round trip per
        batch; after a failed batch the rest is not tried."""
        keys = checked_keys(keys)
        rows.check_keys(len(keys))
        flags = [False] * len(keys)
        self._counters.put_pages += len(keys)
        for start, chunk in self._starts(keys):
            blobs = [frame(key, rows.read(start + i)) for i, key in enumerate(chunk)]
            outcome = self._guarded(partial(self._write, blobs=blobs), chunk, "write_seconds",
                                    write_outcome)
            if outcome is None:
                break
            for offset, fault in enumerate(outcome):
                self._stored(start + offset, fault, len(blobs[offset]), flags)
        return flags

    def remove(self, keys: Sequence[str]) -> None:
        """Drop ``keys`` from the store (absent ones are fine); a fault leaves them."""
        keys = checked_keys(keys)
        for chunk in self._chunks(keys):
            if self._guarded(self._remove, chunk, None, _anything):
                self._counters.removed_pages += len(chunk)

    def clear(self) -> None:
        """Drop every page this backend's store (its directory, prefix or cluster) holds."""
        self._guarded(lambda _keys: self._clear(), [], None, _anything)

    def _purge(self, keys: list[str]) -> None:
        """Delete ``keys`` (objects found bad, or listed but gone); a fault leaves them."""
        if not keys:
            return
        if self._guarded(self._remove, keys, None, _anything):
            self._counters.purged_pages += len(keys)

    def stats(self) -> StorageStats:
        """A snapshot of the counters; pure, any thread."""
        return self._counters.snapshot()

    def _on_down(self) -> None:  # noqa: B027 - optional hook
        """Called after an ``unavailable`` or ``timeout`` fault (on the backend's thread);
        what it raises is counted as an ``error`` fault."""

    def close(self) -> None:  # noqa: B027 - optional hook: most backends hold nothing
        """Release connections and processes; the backend is unusable afterwards."""

    def shutdown(self) -> None:
        """:meth:`close`, counting whatever the store's code raises as an ``error`` fault
        instead of raising it (what a :class:`StorageWorker` calls)."""
        try:
            self.close()
        except Exception:  # the store's code: counted, never the caller's
            self._counters.fault("error")

    # -- what a store implements -------------------------------------------------------

    @abstractmethod
    def _exists(self, keys: list[str]) -> list[bool]:
        """Presence of each key (at most ``max_batch``), or raise."""

    @abstractmethod
    def _read(self, keys: list[str], size: int) -> list[bytes | str | None]:
        """Each key's stored object (``size`` bytes when whole: a bound for stores that read
        into buffers), ``None`` where absent, a fault kind where that key failed; or
        raise."""

    @abstractmethod
    def _write(self, keys: list[str], blobs: list[bytes]) -> list[str | None]:
        """Store each object; per key ``None`` when stored or the fault kind why not."""

    @abstractmethod
    def _remove(self, keys: list[str]) -> None:
        """Delete each key, or raise."""

    @abstractmethod
    def _clear(self) -> None:
        """Delete everything this backend owns, or raise."""

    @abstractmethod
    def _classify(self, error: Exception) -> str:
        """The fault kind (:data:`~radixkv.storage.backend_stats.FAULTS`) of an error other than
        :class:`StorageFault` that a raw call raised (anything else it answers or raises
        counts as ``error``)."""

    # -- shared machinery --------------------------------------------------------------

    def _guarded(self, call: Callable[[list[str]], object], chunk: list[str],
                 timer: str | None, check: Callable[[object, int], _T | None]) -> _T | None:
        """``call(chunk)``'s answer as ``check(answer, len(chunk))`` accepts it; ``None``,
        counted, while the store is down, when the call raised, or when ``check`` refused
        the answer (an ``error`` of the whole batch)."""
        if self._down_until is not None and self._clock() < self._down_until:
            self._counters.fault("unavailable", max(len(chunk), 1))
            return None
        started = time.perf_counter()
        try:
            answer = call(chunk)
        except Exception as error:  # every store failure is a fault, never the caller's
            self._failed(self._kind_of(error), chunk)
            return None
        finally:
            if timer is not None:
                elapsed = time.perf_counter() - started
                setattr(self._counters, timer, getattr(self._counters, timer) + elapsed)
        checked = check(answer, len(chunk))
        if checked is None:
            self._counters.fault("error", max(len(chunk), 1))
        return checked

    def _kind_of(self, error: Exception) -> str:
        if isinstance(error, StorageFault):
            return fault_kind(error.kind)
        try:
            return fault_kind(self._classify(error))
        except Exception:  # the store's code: a classifier that raises names no kind
            return "error"

    def _failed(self, kind: str, chunk: list[str]) -> None:
        self._counters.fault(kind, max(len(chunk), 1))
        if kind in ("unavailable", "timeout"):
            self._down_until = self._clock() + self._retry_after_s
            try:
                self._on_down()
            except Exception:  # the store's hook: counted, never the caller's
                self._counters.fault("error")

    def _accept(self, key: str, blob: Blob | str, rows: PageRows, page: int) -> str | None:
        """Copy ``blob`` into page ``page`` of ``rows`` if it is ``key``'s whole object;
        else the fault kind (counted)."""
        payload = None if isinstance(blob, str) else unframe(key, blob, rows.page_bytes)
        if payload is None:
            kind = blob if isinstance(blob, str) else "corrupt"
            self._counters.fault(kind)
            return kind
        rows.write(page, payload)
        self._counters.get_hits += 1
        self._counters.read_bytes += len(payload) + HEADER_BYTES
        return None

    def _stored(self, index: int, fault: str | None, size: int, flags: list[bool]) -> None:
        if fault is not None:
            self._counters.fault(fault)
            return
        flags[index] = True
        self._counters.put_stored += 1
        self._counters.written_bytes += size

    def _chunks(self, keys: list[str]) -> list[list[str]]:
        return [chunk for _start, chunk in self._starts(keys)]

    def _starts(self, keys: list[str]) -> list[tuple[int, list[str]]]:
        step = self.max_batch
        return [(start, keys[start : start + step]) for start in range(0, len(keys), step)]


def checked_keys(keys: Sequence[str]) -> list[str]:
    """``keys`` as a list once each is a valid key, else :class:`InvalidArgumentError`."""
    if isinstance(keys, str) or not isinstance(keys, Sequence):
        raise InvalidArgumentError("storage keys must be a sequence of str")
    checked = list(keys)
    for key in checked:
        if not isinstance(key, str) or _KEY.fullmatch(key) is None:
            raise InvalidArgumentError(
                f"storage key {key!r} must be 1-200 characters of [A-Za-z0-9_.:-], "
                "the first not '.'")
    return checked


def _anything(_answer: object, _count: int) -> bool:
    """The check of calls whose answer means nothing (remove, clear): they succeeded."""
    return True


def _leading(flags: list[bool]) -> int:
    for index, flag in enumerate(flags):
        if not flag:
            return index
    return len(flags)
