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


class Lease:
    """A request admitted by :meth:`PrefixCache.admit`.

    ``slots[i]`` is the FULL slot of token ``i``. The first ``tree_owned`` slots belong to the
    tree (borrowed at admission, or committed since) and are pinned by ``lock``; the rest, up
    to the end of the last allocated page, belong to the lease. ``cached_length`` is how many
    prompt tokens were reused at admission. Fields are read-only for callers; only the cache
    that issued a lease may change it.
    """

    __slots__ = (
        "_buffer",
        "_num_slots",
        "_tokens",
        "cached_length",
        "id",
        "lock",
        "namespace",
        "owner",
        "priority",
        "state",
        "tree_owned",
        "ttl",
    )

    def __init__(
        self,
        owner: object,
        lease_id: int,
        namespace: Namespace,
        tokens: np.ndarray,
        slots: np.ndarray,
        cached_length: int,
        lock: Lock | None,
        priority: int,
        ttl: int | None,
    ) -> None:
        self.owner = owner
        self.id = lease_id
        self.namespace = namespace
        self._tokens = bytearray(tokens.astype("<u4", copy=False).tobytes())
        self._buffer = np.empty(max(16, 2 * len(slots)), dtype=np.int64)
        self._buffer[: len(slots)] = slots
        self._num_slots = len(slots)
        self.cached_length = cached_length
        self.tree_owned = cached_length
        self.lock = lock
        self.priority = priority
        self.ttl = ttl
        self.state = LeaseState.ACTIVE

    @property
    def num_tokens(self) -> int:
        return len(self._tokens) // 4

    @property
    def tokens(self) -> np.ndarray:
        """The request's tokens so far (prompt and extensions), a read-only uint32 view."""
        return np.frombuffer(bytes(self._tokens), dtype="<u4")

    @property
    def slots(self) -> np.ndarray:
        """FULL slot of each token so far (a read-only view; copy it to keep it)."""
        view = self._buffer[: self.num_tokens]
        view.flags.writeable = False
        return view

    @property
    def allocated_slots(self) -> np.ndarray:
        """Every slot of the lease's pages, tree-owned prefix included (read-only view)."""
        view = self._buffer[: self._num_slots]
        view.flags.writeable = False
        return view

    @property
    def own_slots(self) -> np.ndarray:
        """Slots the lease itself holds (beyond the tree-owned prefix), whole pages."""
        return self._buffer[self.tree_owned : self._num_slots]

    def append(self, tokens: np.ndarray, new_slots: np.ndarray) -> None:
        """Record extension tokens and the whole pages allocated for them (cache-internal)."""
        need = self._num_slots + len(new_slots)
        if need > len(self._buffer):
            grown = np.empty(max(need, 2 * len(self._buffer)), dtype=np.int64)
            grown[: self._num_slots] = self._buffer[: self._num_slots]
            self._buffer = grown
        self._buffer[self._num_slots : need] = new_slots
        self._num_slots = need
        self._tokens += tokens.astype("<u4", copy=False).tobytes()

    def adopt_prefix(self, tree_slots: np.ndarray) -> None:
        """The tree now owns the first ``len(tree_slots)`` tokens with these slots."""
        self._buffer[: len(tree_slots)] = tree_slots
        self.tree_owned = len(tree_slots)

    def key_tokens(self) -> bytes:
        """The packed little-endian u32 tokens (cache-internal)."""
        return bytes(self._tokens)

    def __repr__(self) -> str:
        return (
            f"Lease(id={self.id}, state={self.state.value}, tokens={self.num_tokens}, "
            f"cached={self.cached_length}, tree_owned={self.tree_owned})"
        )
