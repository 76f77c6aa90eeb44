"""An adversarial store: a real FileStorage (pages really go to files in a directory) whose
raw calls, drawn from a seed, also misbehave in every way the contract allows a store's own
code to:

- raise (an exception its classifier names wrongly, names no kind, or raises over);
- stall: the call takes the store's whole timeout (the shared :class:`ManualClock` moves
  on by ``timeout_s``, nothing waits in real time) and fails as a ``timeout``;
- answer garbage: no list, a list of another length, presence flags that are no bools;
- in a read, hand back for a key: nothing, an object that is no bytes, a truncated or
  flipped object, another key's object (pages it was not asked for);
- in a write, store flipped bytes and say it stored them, say it stored what it did not,
  or refuse what it stored; in a lookup, list keys it does not hold.

It never returns the right bytes under a forged frame (:class:`LyingStore` does, and only
the content oracle can catch that). ``expected`` counts, by kind, the faults the backend
must count for what it did (every kind but ``unavailable``, which the backend counts for
calls it skips without asking the store); ``stalls`` the timeouts it played;
``early`` the raw calls it got within a retry window after a timeout (which must not
happen: a stalled store costs one timeout per window).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from radixkv.storage import FileStorage, FileStorageConfig, StorageFault
from radixkv.storage.framing import HEADER_BYTES, frame, unframe

from .stalled import ManualClock


class LockedClock(ManualClock):
    """A :class:`ManualClock` that the store's thread and the test's may both move."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


class AdversarialStore(FileStorage):
    """See the module docstring."""

    def __init__(self, root: Path, seed: int, clock: LockedClock, timeout_s: float,
                 retry_after_s: float) -> None:
        super().__init__(FileStorageConfig(root=root, retry_after_s=retry_after_s,
                                           clock=clock))
        self.chaos = random.Random(seed)
        self.rate = self.chaos.choice((0.02, 0.05, 0.15))
        self.clock, self.timeout_s, self.retry_after_s = clock, timeout_s, retry_after_s
        self.expected: Counter[str] = Counter()
        self.stalls = 0
        self.early = 0
        self.quiet_until: float | None = None

    def _roll(self) -> bool:
        return self.chaos.random() < self.rate

    def _enter(self, keys: list[str]) -> None:
        """Every raw call: note one within a retry window, then maybe fail as a whole."""
        if self.quiet_until is not None and self.clock() < self.quiet_until:
            self.early += 1
        pages = max(len(keys), 1)
        if self.chaos.random() < self.rate / 2:
            self.stalls += 1
            self.expected["timeout"] += pages
            self.clock.advance(self.timeout_s)
            self.quiet_until = self.clock() + self.retry_after_s
            raise StorageFault("timeout", "the store stalled past its timeout")
        if self._roll():
            self.expected["error"] += pages
            raise RuntimeError("the store's client broke")

    def _garbage(self, keys: list[str], good: Any) -> Any:
        """``good``, or (drawn) an answer of another type or length: an error per page."""
        if not self._roll():
            return good
        self.expected["error"] += len(keys)
        return self.chaos.choice((None, "done", 3, good[:-1], [*good, good[0]],
                                  {0: True}))

    # ------------------------------------------------------------------ raw calls

    def _exists(self, keys: list[str]) -> Any:
        self._enter(keys)
        present = super()._exists(keys)
        if self._roll():  # flags that are no bools
            self.expected["error"] += len(keys)
            return [self.chaos.choice((1, "yes", None)) for _ in keys]
        present = [flag or self._roll() for flag in present]  # keys it does not hold
        return self._garbage(keys, present)

    def _read(self, keys: list[str], size: int) -> Any:
        self._enter(keys)
        blobs = super()._read(keys, size)
        items = [self._item(key, blob, keys, blobs) for key, blob in zip(keys, blobs)]
        answer = self._garbage(keys, items)
        if answer is items:
            for key, item in zip(keys, items):
                self._expect_item(key, item, size)
        return answer

    def _item(self, key: str, blob: Any, keys: list[str], blobs: list[Any]) -> Any:
        if not self._roll():
            return blob
        others = [b for k, b in zip(keys, blobs) if k != key and isinstance(b, bytes)]
        choice = self.chaos.randrange(6)
        if choice == 0:
            return None
        if choice == 1:
            return self.chaos.choice((7, "weird", ["x"]))
        if isinstance(blob, bytes) and choice == 2:
            return blob[: self.chaos.randrange(len(blob))]
        if isinstance(blob, bytes) and choice == 3:
            spot = self.chaos.randrange(len(blob))
            return blob[:spot] + bytes([blob[spot] ^ 0x10]) + blob[spot + 1:]
        if others:
            return self.chaos.choice(others)  # a page it was not asked for
        return blob

    def _expect_item(self, key: str, item: Any, size: int) -> None:
        """What the backend must count for this item (the same rules, written here)."""
        if item is None:
            self.expected["missing"] += 1
        elif not isinstance(item, bytes):
            self.expected["error"] += 1
        elif unframe(key, item, size - HEADER_BYTES) is None:
            self.expected["corrupt"] += 1

    def _write(self, keys: list[str], blobs: list[bytes]) -> Any:
        self._enter(keys)
        outcome: list[Any] = []
        faults: Counter[str] = Counter()
        for key, blob in zip(keys, blobs):
            draw = self.chaos.randrange(12) if self._roll() else None
            if draw in (0, 1, 2):  # flipped bytes, said to be stored
                blob = blob[:-1] + bytes([blob[-1] ^ 0x01])
            stored = draw != 3 and super()._write([key], [blob])[0] is None
            if draw == 3:  # not stored, said to be
                outcome.append(None)
            elif draw == 4:  # stored, said to be refused
                outcome.append("full")
                faults["full"] += 1
            elif draw == 5:
                outcome.append(self.chaos.choice((0, "stored", True)))
                faults["error"] += 1
            else:
                outcome.append(None if stored else "error")
                faults["error"] += not stored
        answer = self._garbage(keys, outcome)
        if answer is outcome:  # else the whole batch is one error, counted by _garbage
            self.expected.update(faults)
        return answer

    def _remove(self, keys: list[str]) -> None:
        self._enter(keys)
        if not self._roll():  # else: says it removed them, but did not
            super()._remove(keys)

    def _classify(self, error: Exception) -> Any:
        choice = self.chaos.randrange(4)
        if choice == 0:
            raise ValueError("the classifier broke too")
        return ("error", "nonsense", None, 42)[choice]


class LyingStore(AdversarialStore):
    """Reads hand back another stored page of the same size, framed under the key asked
    for: the framing check passes, so only the content oracle can see it."""

    def _read(self, keys: list[str], size: int) -> Any:
        blobs = FileStorage._read(self, keys, size)
        whole = [b for b in blobs if isinstance(b, bytes) and len(b) == size]
        lies = []
        for key, blob in zip(keys, blobs):
            other = [b for b in whole if b is not blob]
            lies.append(frame(key, other[0][HEADER_BYTES:]) if other else blob)
        return lies
