"""Lease: one request's hold on the cache, from admission to finish or abort."""

from __future__ import annotations

import enum

import numpy as np

from ..core.keys import Namespace
from ..core.types import Lock


class LeaseState(enum.Enum):
    ACTIVE = "active"
    FINISHED = "finished"
    ABORTED = "aborted"
    INVALIDATED = "invalidated"
    """The cache was reset while the lease was active."""


def _readonly(view: np.ndarray) -> np.ndarray:
    view.flags.writeable = False
    return view


class Lease:
    """A request admitted by :meth:`PrefixCache.admit`. Callers read it; only the cache that
    issued it changes it.

    FULL: ``slots[i]`` is the KV slot of token ``i``. The first ``tree_owned`` slots belong
    to the tree (borrowed at admission, or committed since) and are pinned by ``lock``; the
    rest, to the end of the last allocated page, belong to the lease. ``cached_length`` is
    how many prompt tokens were reused at admission.

    SWA: ``swa_slots`` holds the SWA slots of tokens ``swa_start ..`` (the window the tree
    lent at admission, then the lease's own); tokens before ``swa_dropped`` left the window
    and their own slots were released.

    MAMBA: ``state_slot`` is the request's working state; ``copy_state_from`` is the
    tree's state to copy into it before prefilling (copy-on-write), ``None`` to start from
    zeros; ``checkpoint_hints`` are positions where saving a state lets later requests hit;
    ``checkpoints`` maps positions to the state slots the request saved there.
    """

    __slots__ = (
        "_full",
        "_num_slots",
        "_swa",
        "_tokens",
        "cached_length",
        "checkpoint_hints",
        "checkpoints",
        "copy_state_from",
        "id",
        "lock",
        "namespace",
        "owner",
        "priority",
        "state",
        "state_slot",
        "swa_dropped",
        "tree_owned",
        "ttl",
        "window_start",
    )

    def __init__(
        self, owner: object, lease_id: int, namespace: Namespace, cached_length: int,
        lock: Lock | None, priority: int, ttl: int | None,
    ) -> None:
        self.owner, self.id, self.namespace = owner, lease_id, namespace
        self._tokens = bytearray()
        self._full = np.empty(16, dtype=np.int64)
        self._swa: np.ndarray | None = None
        self._num_slots = 0
        self.cached_length = self.tree_owned = cached_length
        self.lock, self.priority, self.ttl = lock, priority, ttl
        self.state = LeaseState.ACTIVE
        self.window_start = self.swa_dropped = 0
        self.state_slot: int | None = None
        self.copy_state_from: int | None = None
        self.checkpoint_hints: tuple[int, ...] = ()
        self.checkpoints: dict[int, int] = {}

    # ---------------------------------------------------------------- tokens and FULL

    @property
    def num_tokens(self) -> int:
        return len(self._tokens) // 4

    @property
    def tokens(self) -> np.ndarray:
        """The request's tokens so far (prompt and extensions), a read-only uint32 array."""
        return np.frombuffer(bytes(self._tokens), dtype="<u4")

    @property
    def slots(self) -> np.ndarray:
        """FULL slot of each token so far (a read-only view; copy it to keep it)."""
        return _readonly(self._full[: self.num_tokens])

    @property
    def allocated_slots(self) -> np.ndarray:
        """Every FULL slot of the lease's pages, tree-owned prefix included (read-only)."""
        return _readonly(self._full[: self._num_slots])

    @property
    def own_slots(self) -> np.ndarray:
        """FULL slots the lease itself holds (beyond the tree-owned prefix), whole pages."""
        return _readonly(self._full[self.tree_owned : self._num_slots])

    # ---------------------------------------------------------------- SWA

    @property
    def swa_start(self) -> int:
        """First token whose SWA slot the lease can use."""
        return max(self.window_start, self.swa_dropped)

    @property
    def swa_slots(self) -> np.ndarray:
        """SWA slots of tokens ``swa_start .. num_tokens-1`` (read-only; empty without SWA)."""
        if self._swa is None:
            return np.zeros(0, dtype=np.int64)
        return _readonly(self._swa[self.swa_start : self.num_tokens])

    def swa_buffer(self) -> np.ndarray:
        """SWA slots aligned to token positions (cache-internal; only ``swa_start..`` valid)."""
        assert self._swa is not None
        return self._swa[: self._num_slots]

    @property
    def own_swa_slots(self) -> np.ndarray:
        """SWA slots the lease itself holds, whole pages (empty without SWA)."""
        if self._swa is None:
            return np.zeros(0, dtype=np.int64)
        return _readonly(self._swa[max(self.tree_owned, self.swa_dropped) : self._num_slots])

    # ---------------------------------------------------------------- cache-internal updates

    def append(self, packed: bytes, full: np.ndarray, swa: np.ndarray | None) -> None:
        """Record tokens (packed little-endian u32) and the whole pages allocated for them
        (FULL, and SWA alongside)."""
        need = self._num_slots + len(full)
        if need > len(self._full):
            size = max(need, 2 * len(self._full))
            self._full = _grown(self._full, size, self._num_slots)
            if self._swa is not None:
                self._swa = _grown(self._swa, size, self._num_slots)
        if swa is not None:
            if self._swa is None:
                self._swa = np.zeros(len(self._full), dtype=np.int64)
            self._swa[self._num_slots : need] = swa
        self._full[self._num_slots : need] = full
        self._num_slots = need
        self._tokens += packed

    def adopt_prefix(self, full: np.ndarray) -> None:
        """The tree now owns the first ``len(full)`` tokens, with these FULL slots."""
        self._full[: len(full)] = full
        self.tree_owned = len(full)

    def set_swa(self, start: int, values: np.ndarray) -> None:
        """Write SWA slots the tree lends for tokens ``start ..``."""
        assert self._swa is not None
        self._swa[start : start + len(values)] = values

    def key_tokens(self) -> bytes:
        """The packed little-endian u32 tokens."""
        return bytes(self._tokens)

    def __repr__(self) -> str:
        return (
            f"Lease(id={self.id}, state={self.state.value}, tokens={self.num_tokens}, "
            f"cached={self.cached_length}, tree_owned={self.tree_owned})"
        )


def _grown(buffer: np.ndarray, size: int, used: int) -> np.ndarray:
    grown = np.zeros(size, dtype=np.int64)
    grown[:used] = buffer[:used]
    return grown
