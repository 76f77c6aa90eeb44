"""Lease: one request's hold on the cache, from admission to finish or abort."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ..components.request import StateBuffer, TokenBuffer
from ..core.keys import TOKEN_BYTES, Namespace
from ..core.types import Lock
from ..errors import InvalidArgumentError
from .results import PRIMARY

Buffer = Any
"""A request side's per-lease buffer (see :mod:`radixkv.components.request`)."""


class LeaseState(enum.Enum):
    ACTIVE = "active"
    FINISHED = "finished"
    ABORTED = "aborted"
    INVALIDATED = "invalidated"
    """The cache was reset while the lease was active."""
    FAILED = "failed"
    """A load-back its prefix needed failed: everything it held was freed; admit again."""


def _readonly(view: np.ndarray) -> np.ndarray:
    view.flags.writeable = False
    return view


_EMPTY = _readonly(np.zeros(0, dtype=np.int64))


class Lease:
    """A request admitted by :meth:`PrefixCache.admit`. Callers read it; only the cache that
    issued it changes it. Slot arrays it returns are read-only views, valid while the lease
    is active (copy them to keep them).

    Per-token components: ``slots_of(name)`` holds the request's slots of tokens
    ``start_of(name) ..``: the window the tree lent at admission (from ``lent_from(name)``,
    what its lock pins), then the lease's own; tokens before ``dropped_of(name)`` left the
    window and their own slots were released (:meth:`PrefixCache.slide_window`). For the
    primary (FULL) component that is every token: ``slots[i]`` is the slot of token ``i``. The first
    ``tree_owned`` tokens belong to the tree (borrowed at admission, or committed since) and
    are pinned by ``lock``; the rest, to the end of the last allocated page, belong to the
    lease. ``cached_length`` is how many prompt tokens were reused at admission.

    State component (MAMBA): ``state_slot`` is the request's working state;
    ``copy_state_from`` is the tree's state to copy into it before prefilling (copy-on-write),
    ``None`` to start from zeros; ``checkpoint_hints`` are positions where saving a state lets
    later requests hit; ``checkpoints`` maps positions to the state slots saved there.

    With a host tier, a lease admitted with ``load_back=True`` (or whose prefix another
    request is loading back) is not :attr:`ready` until its copies are acknowledged.

    ``swa_slots``, ``swa_start``, ``swa_dropped``, ``own_swa_slots`` and ``window_start``
    are shorthands for the component named ``"swa"`` (empty or 0 without it).
    """

    __slots__ = (
        "_names",
        "_num_slots",
        "_tokens",
        "buffers",
        "cached_length",
        "id",
        "lock",
        "namespace",
        "owner",
        "priority",
        "state",
        "tree_owned",
        "ttl",
        "waiting",
    )

    def __init__(
        self, owner: object, lease_id: int, namespace: Namespace, cached_length: int,
        lock: Lock | None, priority: int, ttl: int | None, buffers: list[Buffer],
        names: tuple[str, ...],
    ) -> None:
        self.owner, self.id, self.namespace = owner, lease_id, namespace
        self._tokens = bytearray()
        self.buffers, self._names = buffers, names
        self._num_slots = 0
        self.cached_length = self.tree_owned = cached_length
        self.lock, self.priority, self.ttl = lock, priority, ttl
        self.state = LeaseState.ACTIVE
        self.waiting: set[int] = set()
        """Tickets of the load-backs its prefix waits for (see :attr:`ready`)."""

    @property
    def ready(self) -> bool:
        """Whether the KV of the cached prefix is in place: False while host-to-device
        copies it needs are in flight (:meth:`PrefixCache.poll` reports when they land);
        only then may the engine read it. extend/commit/finish refuse a lease not ready. A
        FAILED lease is never ready (admit again)."""
        return not self.waiting and self.state is not LeaseState.FAILED

    # ---------------------------------------------------------------- tokens and FULL

    @property
    def num_tokens(self) -> int:
        return len(self._tokens) // TOKEN_BYTES

    @property
    def tokens(self) -> np.ndarray:
        """The request's tokens so far (prompt and extensions), a read-only uint32 array."""
        return np.frombuffer(bytes(self._tokens), dtype="<u4")

    @property
    def slots(self) -> np.ndarray:
        """Primary (FULL) slot of each token so far (a read-only view)."""
        return _readonly(self._primary.slots[: self.num_tokens])

    @property
    def num_allocated(self) -> int:
        """How many primary slots the lease's pages hold (``len(allocated_slots)``)."""
        return self._num_slots

    @property
    def allocated_slots(self) -> np.ndarray:
        """Every primary slot of the lease's pages, tree-owned prefix included (read-only)."""
        return _readonly(self._primary.slots[: self._num_slots])

    @property
    def num_own(self) -> int:
        """How many primary slots the lease itself holds (``len(own_slots)``), without
        building the view; O(1)."""
        return self._num_slots - self.tree_owned

    @property
    def own_slots(self) -> np.ndarray:
        """Primary slots the lease itself holds (beyond the tree-owned prefix), whole pages."""
        return _readonly(self._primary.slots[self.tree_owned : self._num_slots])

    @property
    def _primary(self) -> TokenBuffer:
        buffer = self.buffers[PRIMARY]
        assert isinstance(buffer, TokenBuffer)
        return buffer

    # ---------------------------------------------------------------- per component

    def buffer(self, name: str) -> Buffer:
        """The cache-internal buffer of component ``name``; :class:`InvalidArgumentError`
        if the cache has no such component."""
        if name not in self._names:
            raise InvalidArgumentError(f"this cache has no component {name!r}")
        return self.buffers[self._names.index(name)]

    def _tokens_of(self, name: str) -> TokenBuffer | None:
        if name not in self._names:
            return None
        buffer = self.buffers[self._names.index(name)]
        if not isinstance(buffer, TokenBuffer):
            raise InvalidArgumentError(f"component {name!r} does not hold slots per token")
        return buffer

    def start_of(self, name: str) -> int:
        """First token whose slot of per-token component ``name`` the lease can use."""
        buffer = self._tokens_of(name)
        return 0 if buffer is None else buffer.start

    def dropped_of(self, name: str) -> int:
        """Tokens before this left the window of component ``name``; their own slots were
        released."""
        buffer = self._tokens_of(name)
        return 0 if buffer is None else buffer.dropped

    def slots_of(self, name: str) -> np.ndarray:
        """Slots of component ``name`` for tokens ``start_of(name) .. num_tokens-1``."""
        buffer = self._tokens_of(name)
        if buffer is None:
            return _EMPTY
        return _readonly(buffer.slots[buffer.start : self.num_tokens])

    def own_slots_of(self, name: str) -> np.ndarray:
        """Slots of component ``name`` the lease itself holds, whole pages."""
        buffer = self._tokens_of(name)
        if buffer is None:
            return _EMPTY
        start = max(self.tree_owned, buffer.dropped)
        return _readonly(buffer.slots[start : self._num_slots])

    def lent_from(self, name: str) -> int:
        """First token of the window of component ``name`` that the lease's lock pins."""
        buffer = self._tokens_of(name)
        return 0 if buffer is None else buffer.lent_from

    @property
    def window_start(self) -> int:
        return self.lent_from("swa")

    @property
    def swa_start(self) -> int:
        return self.start_of("swa")

    @property
    def swa_dropped(self) -> int:
        return self.dropped_of("swa")

    @property
    def swa_slots(self) -> np.ndarray:
        return self.slots_of("swa")

    @property
    def own_swa_slots(self) -> np.ndarray:
        return self.own_slots_of("swa")

    # ---------------------------------------------------------------- the state component

    @property
    def _state(self) -> StateBuffer | None:
        for buffer in self.buffers:
            if isinstance(buffer, StateBuffer):
                return buffer
        return None

    @property
    def state_slot(self) -> int | None:
        state = self._state
        return None if state is None else state.working

    @property
    def copy_state_from(self) -> int | None:
        state = self._state
        return None if state is None else state.copy_from

    @property
    def checkpoint_hints(self) -> tuple[int, ...]:
        state = self._state
        return () if state is None else state.hints

    @property
    def checkpoints(self) -> dict[int, int]:
        """Positions and the state slots saved there (a copy)."""
        state = self._state
        return {} if state is None else dict(state.checkpoints)

    # ---------------------------------------------------------------- cache-internal

    def record(self, packed: bytes, added: int) -> int:
        """Record tokens (packed little-endian u32) and ``added`` allocated slots (whole
        pages); return how many slots were allocated before."""
        used = self._num_slots
        self._num_slots = used + added
        self._tokens += packed
        return used

    def key_tokens(self, length: int | None = None) -> bytes:
        """The packed little-endian u32 tokens (the first ``length`` of them)."""
        if length is None:
            return bytes(self._tokens)
        # bench sim: one copy of the prefix, no copy of the whole buffer sliced again
        return bytes(memoryview(self._tokens)[: TOKEN_BYTES * length])

    def __repr__(self) -> str:
        return (
            f"Lease(id={self.id}, state={self.state.value}, tokens={self.num_tokens}, "
            f"cached={self.cached_length}, tree_owned={self.tree_owned})"
        )
