"""The request side of a component: what a request allocates, holds and hands back.

A cache builds one request side per component (``component.request_side(component)``) and
drives every component through it alike: it knows no component by name. Two kinds ship:

- :class:`TokenSide` for per-token components (FULL, SWA, chunked local): a request holds a
  slot array aligned to its token positions. The tree lends it the slots of its cached
  prefix from the lock's boundary on (the window the lock pins; 0 for FULL); the request
  owns the rest, and may hand back the slots that left its window early
  (:meth:`TokenSide.slide`).
- :class:`StateSide` for per-value components (MAMBA): a request holds one working state
  slot, copies the tree's state at its match end into it (copy-on-write), and saves
  checkpoints at positions it chooses, which the tree takes on insert.

Each side keeps one small buffer object per lease (:meth:`new_buffer`); only the side reads
or writes it. No method here validates: the cache has done so before calling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.node import Node
from ..core.types import Lock, TreeMatch

if TYPE_CHECKING:
    from ..core.tree import TreeCore
    from .base import Component

NO_SLOTS = np.zeros(0, dtype=np.int64)
_DECODE_ROOM = np.zeros(16, dtype=np.int64)
"""Room for 16 decode tokens at the end of a lent buffer (concatenated, never written)."""


class TokenBuffer:
    """One request's slots of a per-token component, aligned to token positions.

    ``slots[p]`` is valid for ``start <= p < allocated``: positions before ``lent_from`` were
    never lent (outside the window the lock pins), before ``dropped`` were handed back."""

    __slots__ = ("dropped", "lent_from", "slots")

    def __init__(self) -> None:
        # bench admit_finish (short, p1): lend() sets the real array; np.empty 0.19 us saved
        self.slots = NO_SLOTS
        self.lent_from = 0
        self.dropped = 0

    @property
    def start(self) -> int:
        """First position whose slot the request can use."""
        return max(self.lent_from, self.dropped)


class StateBuffer:
    """One request's state slots: the working state, the tree's state to copy into it
    first (``None``: start from zeros), where saving states helps later requests, and the
    states saved so far by position."""

    __slots__ = ("checkpoints", "copy_from", "hints", "working")

    def __init__(self) -> None:
        self.working: int | None = None
        self.copy_from: int | None = None
        self.hints: tuple[int, ...] = ()
        self.checkpoints: dict[int, int] = {}


class RequestSide:
    """How requests hold one component's slots; one per component of a cache.

    Every method takes the lease's buffer of this component (from :meth:`new_buffer`) and
    mutates only it, unless it says otherwise; none validates (the cache has), none
    allocates or frees: it returns the slots to free. ``used``/``allocated``: slots of the
    per-token pages the lease holds; ``owned_from``: where its own slots begin (before it,
    the tree's: its ``tree_owned``). Costs are O(slots touched) numpy work.
    """

    per_token: bool
    """Whether requests hold one slot per token (else one working state slot)."""

    def __init__(self, component: Component) -> None:
        self.component = component
        self.index = component.index
        self.windowed = component.spec.windowed
        """Whether a request may hand back slots before it finishes (:meth:`slide`)."""

    def new_buffer(self) -> Any:
        """A fresh per-lease buffer."""
        raise NotImplementedError

    def need(self, tokens: int, states: int) -> int:
        """Slots a request adding ``tokens`` token slots (whole pages) and ``states``
        states takes from this component's pool; pure."""
        raise NotImplementedError

    def lend(self, buffer: Any, tree: TreeCore, found: TreeMatch, lock: Lock | None,
             fresh: np.ndarray, num_tokens: int) -> None:
        """At admission of ``num_tokens`` tokens matched as ``found`` and pinned by
        ``lock``: record what the tree lends and the ``fresh`` slots allocated."""
        raise NotImplementedError

    def append(self, buffer: Any, used: int, fresh: np.ndarray) -> None:
        """Record ``fresh`` slots allocated for new tokens after the first ``used``."""

    def relend(self, buffer: Any, tree: TreeCore, node: Node, length: int,
               lock: Lock, owned_from: int = 0) -> None:
        """After a commit moved the lock to the prefix ``[0, length)`` ending in ``node``
        (``owned_from``: up to where the request's buffer already held the tree's slots)."""

    def slide(self, buffer: Any, cacheable: int, owned_from: int) -> np.ndarray:
        """The request's own slots that left the window of a prefix of ``cacheable``
        positions, now handed back."""
        return NO_SLOTS

    def insert_input(self, buffer: Any, length: int) -> object:
        """The tree's insert input for the request's first ``length`` positions; pure."""
        raise NotImplementedError

    def after_insert(self, buffer: Any, length: int, freed: np.ndarray) -> int:
        """After an insert the tree holds ``length`` positions (``freed``: what it returned
        of this component); how many new checkpoints the tree took."""
        return 0

    def release(self, buffer: Any, cached: int, allocated: int) -> np.ndarray:
        """The request's slots to free when the tree holds its first ``cached`` positions
        (finish or abort); the buffer holds nothing afterwards."""
        raise NotImplementedError

    def held(self, buffer: Any, owned_from: int, allocated: int) -> np.ndarray:
        """The slots the request itself holds (not the tree's); pure."""
        raise NotImplementedError

    def disagreement(self, buffer: Any, tree: TreeCore, node: Node, owned_from: int) -> bool:
        """Whether the slots the tree lent differ from the tree's own (an audit); pure."""
        return False

    def snapshot(self, buffer: Any, num_tokens: int) -> Any:
        """The buffer as plain data; pure."""
        raise NotImplementedError

    def direct_input(self, part: np.ndarray, length: int) -> object:
        """The tree's input for a caller-held insert of ``length`` positions with this
        component's slots ``part``; pure."""
        raise NotImplementedError

    def direct_leftover(self, freed: np.ndarray, part: np.ndarray, length: int,
                        cached: int) -> np.ndarray:
        """What goes back to the pool after a caller-held insert of ``length`` positions
        that the tree now holds ``cached`` of, ``freed`` being its duplicates; pure."""
        raise NotImplementedError


class TokenSide(RequestSide):
    """Request side of a per-token component (see the module docstring)."""

    per_token = True

    def new_buffer(self) -> TokenBuffer:
        return TokenBuffer()

    def need(self, tokens: int, states: int) -> int:
        return tokens

    def lend(self, buffer: TokenBuffer, tree: TreeCore, found: TreeMatch, lock: Lock | None,
             fresh: np.ndarray, num_tokens: int) -> None:
        """At admission: the tree's slots of the pinned window of ``found``, then ``fresh``."""
        length = found.length
        lent_from = 0 if lock is None else self._lent_from(lock, length)
        buffer.lent_from = lent_from
        if not lent_from:
            # bench admit_finish (short, p1): the path's values, the fresh slots and the
            # decode room in one concatenation (lend 3.9 -> 2.1 us), when the locked path
            # ends at the prefix's end (it does: lock_match splits there); else as below
            index = self.index
            values: tuple[Any, ...] = (*[node.values[index] for node in found.path], fresh,
                                       _DECODE_ROOM)
            slots: np.ndarray | None
            try:  # bench admit_finish (short, p1): a tuple concatenates 1.6x faster (1.8 us)
                slots = np.concatenate(values)
            except ValueError:  # a value missing: path_values raises the precise error
                slots = None
            if slots is not None and len(slots) == length + len(fresh) + 16:
                buffer.slots = slots
                return
        lent = tree.path_values(found, self.index, lent_from) if lent_from < length \
            else NO_SLOTS
        # room for 16 decode tokens, so the first extensions do not regrow the buffer
        buffer.slots = np.concatenate((np.zeros(lent_from, dtype=np.int64), lent, fresh,
                                       _DECODE_ROOM))

    def _lent_from(self, lock: Lock, length: int) -> int:
        """Where the slots lent for a prefix of ``length`` begin: the lock's boundary (the
        start of the node the window begins in), or ``length`` for an empty window (the lock
        may still pin the node the prefix ends in, which may hold no value)."""
        if self.component.window_start(length) >= length:
            return length
        return lock.boundaries[self.index]

    def append(self, buffer: TokenBuffer, used: int, fresh: np.ndarray) -> None:
        """Record ``fresh`` slots after the first ``used`` (growing the buffer)."""
        need = used + len(fresh)
        if need > len(buffer.slots):
            # bench sim: not zeroed, positions past the allocated ones are never read
            # (zeroing was 2.2% of a run's instructions, cachegrind)
            grown = np.empty(max(need, 2 * len(buffer.slots)), dtype=np.int64)
            grown[:used] = buffer.slots[:used]
            buffer.slots = grown
        buffer.slots[used:need] = fresh

    def relend(self, buffer: TokenBuffer, tree: TreeCore, node: Node, length: int,
               lock: Lock, owned_from: int = 0) -> None:
        """After a commit moved the lock to ``[0, length)`` ending in ``node``: the tree's
        slots replace the request's on the window that lock pins. Those it could use
        before, up to ``owned_from``, are the tree's already (lent, or taken by the tree
        from the request; the tree never changes a value a lock pins), so unless the window
        now starts earlier than before only ``[owned_from, length)`` is rewritten."""
        before = buffer.start
        buffer.lent_from = self._lent_from(lock, length)
        start = buffer.start
        if start >= before:  # bench sim (896 tokens, p16): read only the new part's values
            start = max(start, owned_from)
        if start < length:
            buffer.slots[start:length] = tree.values_between(node, self.index, start)[
                : length - start]

    def slide(self, buffer: TokenBuffer, cacheable: int, owned_from: int) -> np.ndarray:
        """Hand back the request's own slots that left the window of a prefix of
        ``cacheable`` positions (whole pages; ``owned_from``: where its own slots begin)."""
        page = self.component.page_size
        dropped = self.component.window_start(cacheable)
        dropped -= dropped % page
        if dropped <= buffer.dropped:
            return NO_SLOTS
        held_from = max(owned_from, buffer.dropped)
        buffer.dropped = dropped
        return buffer.slots[held_from:dropped] if dropped > held_from else NO_SLOTS

    def insert_input(self, buffer: TokenBuffer, length: int) -> object:
        return self.component.token_input(buffer.slots[:length], min(buffer.dropped, length))

    def release(self, buffer: TokenBuffer, cached: int, allocated: int) -> np.ndarray:
        return buffer.slots[max(cached, buffer.dropped) : allocated]

    def held(self, buffer: TokenBuffer, owned_from: int, allocated: int) -> np.ndarray:
        return buffer.slots[max(owned_from, buffer.dropped) : allocated]

    def disagreement(self, buffer: TokenBuffer, tree: TreeCore, node: Node,
                     owned_from: int) -> bool:
        start = buffer.start
        if start >= owned_from:
            return False
        theirs = tree.values_between(node, self.index, start)[: owned_from - start]
        return not np.array_equal(theirs, buffer.slots[start:owned_from])

    def snapshot(self, buffer: TokenBuffer, num_tokens: int) -> Any:
        return (buffer.slots[buffer.start : num_tokens].tobytes(), buffer.lent_from,
                buffer.dropped)

    # ------------------------------------------------------------ caller-held slots

    def direct_input(self, part: np.ndarray, length: int) -> object:
        return self.component.token_input(part[:length], 0)

    def direct_leftover(self, freed: np.ndarray, part: np.ndarray, length: int,
                        cached: int) -> np.ndarray:
        """What goes back to the pool after a caller-held insert the tree kept ``cached``
        positions of: the duplicates and everything past them."""
        rest = part[cached:]
        if not len(rest):  # bench insert: usually one side is empty, a view costs no copy
            return freed
        return np.concatenate((freed, rest)) if len(freed) else rest


class StateSide(RequestSide):
    """Request side of a per-value state component (see the module docstring)."""

    per_token = False

    def new_buffer(self) -> StateBuffer:
        return StateBuffer()

    def need(self, tokens: int, states: int) -> int:
        return states

    def lend(self, buffer: StateBuffer, tree: TreeCore, found: TreeMatch, lock: Lock | None,
             fresh: np.ndarray, num_tokens: int) -> None:
        """At admission: the working state, the state to copy and the checkpoint hints."""
        buffer.working = int(fresh[0])
        node = found.node
        state = None if node is None else tree.value(node, self.index)
        buffer.copy_from = None if state is None else int(state[0])
        buffer.hints = self.component.checkpoint_hints(found.length, found.branch, num_tokens)

    def insert_input(self, buffer: StateBuffer, length: int) -> object:
        return {p: s for p, s in buffer.checkpoints.items() if p <= length}

    def after_insert(self, buffer: StateBuffer, length: int, freed: np.ndarray) -> int:
        """Forget the checkpoints the tree took or returned; how many it took."""
        used = [p for p in buffer.checkpoints if p <= length]
        for position in used:
            del buffer.checkpoints[position]
        return len(used) - len(freed)

    def release(self, buffer: StateBuffer, cached: int, allocated: int) -> np.ndarray:
        slots = self.held(buffer, cached, allocated)
        buffer.checkpoints, buffer.working = {}, None
        return slots

    def held(self, buffer: StateBuffer, owned_from: int, allocated: int) -> np.ndarray:
        states = [*buffer.checkpoints.values(), buffer.working]
        return np.array([s for s in states if s is not None], dtype=np.int64)

    def disagreement(self, buffer: StateBuffer, tree: TreeCore, node: Node,
                     owned_from: int) -> bool:
        return False

    def snapshot(self, buffer: StateBuffer, num_tokens: int) -> Any:
        return (buffer.working, tuple(sorted(buffer.checkpoints.items())))

    def direct_input(self, part: np.ndarray, length: int) -> object:
        """``part`` holds the caller's state slot, if any: the checkpoint at ``length``."""
        return {length: int(part[0])} if len(part) and length else {}

    def direct_leftover(self, freed: np.ndarray, part: np.ndarray, length: int,
                        cached: int) -> np.ndarray:
        """The state slot goes back unless the tree took it (or returned it as a duplicate)."""
        # the slot is the checkpoint at ``length``: an insert the tree cut short of it (at a
        # node a load-back is still writing to) neither took nor returned it
        return part if len(part) and (cached < length or not length) else freed
