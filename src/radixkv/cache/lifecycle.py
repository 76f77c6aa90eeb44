"""The request life-cycle of a PrefixCache: leases from admission to finish or abort."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.keys import TOKEN_BYTES, encode_tokens
from ..core.node import Node
from ..core.types import TreeInsert, TreeMatch
from ..errors import EngineError, InvalidArgumentError, LeaseError
from .arguments import as_bool, as_int, as_optional_int, request_args
from .lease import Lease, LeaseState
from .load_back import LoadBack
from .results import PRIMARY
from .tier_driver import TierDriver

if TYPE_CHECKING:  # the state imports the parts' modules that build its listener
    from .cache_state import CacheState


class Lifecycle:
    """admit → extend / commit / checkpoint / slide_window → finish or abort.

    Built on the cache's state (the references below), with the :class:`LoadBack` admit
    uses and the :class:`TierDriver` that tells the tiers below the device of what was
    admitted and inserted."""

    def __init__(self, state: CacheState, load_back: LoadBack, tiers: TierDriver) -> None:
        self.load_back = load_back
        self.tiers = tiers
        self.config, self.page_size = state.config, state.page_size
        self.tree, self.pools, self.room = state.tree, state.pools, state.room
        self.sides, self.names = state.sides, state.names
        self.counters, self.explain, self.tiered = state.counters, state.explain, state.tiered
        self._state, self._checkpointing = state._state, state._checkpointing
        self._owner, self._lease_ids, self._leases = \
            state._owner, state._lease_ids, state._leases
        # bench admit_finish: the state's bookkeeping bound once (calls cost what self's did)
        self._needs, self._key, self.pages_for = state._needs, state._key, state.pages_for
        self._count_match, self._check_active = state._count_match, state._check_active
        self._end_lease = state._end_lease

    # ------------------------------------------------------------------ admission

    def admit(
        self, tokens: Any, namespace: Any = None, *, priority: int = 0, ttl: int | None = None,
        max_match: int | None = None, load_back: bool = False,
    ) -> Lease:
        """Admit a request: match its prompt (reusing at most ``max_match`` tokens, e.g.
        ``len(prompt) - 1`` so the engine computes the last token's logits), lock the cached
        prefix, allocate the rest (and, with a state component, a working state slot).
        Evicts as needed. With a host tier and ``load_back``, the prefix runs on as far as
        host values make it usable: device slots are allocated for the host part, its
        host-to-device copies are submitted, and the lease is not :attr:`~Lease.ready` until
        they are acknowledged (:meth:`poll`); a lease whose prefix another request is
        loading back waits for that copy too. With a storage tier as well, L3 is asked for
        more of the prompt first (see :meth:`prefetch`); what arrived within the wait
        policy joins the host prefix (and stays cached even if this admit then raises).
        Raises :class:`OutOfSlotsError` (nothing changed, not even recency) when even evicting
        everything evictable cannot make room (with a host tier, backups in flight were
        waited for first: their acknowledgements are applied, as a :meth:`poll` would)."""
        packed, space, priority, ttl = request_args(tokens, namespace, priority, ttl)
        num_tokens = len(packed) // TOKEN_BYTES
        if type(max_match) is not int or max_match < 0:  # bench sim: a plain int, 2 tests
            max_match = as_optional_int("max_match", max_match, 0)
        if max_match is not None and self.config.bigram:
            max_match += 1  # a bigram spans the next token
        key = self._key(packed, max_match)
        loading = load_back is not False and as_bool("load_back", load_back) and self.tiered
        if loading:
            self.tiers.lookup(key, space)
        found = self.tree.match(key, space, touch=False)
        device_length, loads = found.length, None
        if loading and found.length < found.branch:
            found, loads = self.load_back.lower_prefix(key, space, found)
        page = self.page_size  # bench admit_finish: pages_for inline (pays for the try below)
        fresh_tokens = -(-(num_tokens - found.length) // page) * page
        needs = self._needs(fresh_tokens, states=1)
        room = needs if loads is None else self.load_back.with_loads(needs, loads)
        self.room.ensure_room(room, found.node, found.length)
        lock = None
        if loads is not None:  # before anything is counted: the engine may refuse the copy
            lock = self.load_back.lock_and_load(found, device_length, loads)
            if lock is None:  # refused: the host part is a miss, admit what the device holds
                found = self.tree.match(key, space, touch=False)
                fresh_tokens = self.pages_for(num_tokens - found.length)
                needs = self._needs(fresh_tokens, states=1)
                self.room.ensure_room(needs, found.node, found.length)
        self.tree.touch(found)
        # bench sim (896 tokens, p16): the uncapped key only where the lost-hit ledger reads it
        self._count_match(num_tokens, found, key, space,
                          None if max_match is None or not self.explain else self._key(packed))
        if lock is None and found.node is not None:
            lock = self.tree.lock_match(found)
        lease = Lease(self._owner, next(self._lease_ids), space, found.length, lock,
                      priority, ttl, [side.new_buffer() for side in self.sides], self.names)
        if lock is not None:
            lock.lease = lease.id
        lease.record(packed, found.length + fresh_tokens)
        # bench admit_finish: the loop in the try and the rest in its else (which returns)
        # cost one opcode (a NOP) over no try at all; a local and a jump cost three
        try:
            for side, buffer, part in zip(self.sides, lease.buffers,
                                          self.room.allocate(needs)):
                side.lend(buffer, self.tree, found, lock, part, num_tokens)
        except EngineError:  # the engine's allocator answered out of contract: hold nothing
            if lock is not None:
                self.tree.unlock(lock)
            raise
        else:
            counters = self.counters
            if self._state is not None:  # bench admit_finish (short, p1): 0.21 -> 0.02 us
                counters["checkpoints_used"] += \
                    lease.buffers[self._state].copy_from is not None
            self._leases[lease.id] = lease
            counters["admitted"] += 1
            if self.tiered:
                self._admitted_with_lower(lease, found)
            return lease

    def _admitted_with_lower(self, lease: Lease, found: TreeMatch) -> None:
        if self.tree.copying:
            self.load_back.wait_for_loads(lease, found.path)
        self.tiers.stored(found.path)

    # ------------------------------------------------------------------ running requests

    def extend(self, lease: Lease, tokens: Any) -> np.ndarray:
        """Append decode tokens to an active lease; return their primary (FULL) slots (a
        copy).

        Allocates a page (of every per-token component) only when the lease's last page is
        full, evicting if needed. Raises :class:`LeaseError`, :class:`InvalidTokensError` or
        :class:`OutOfSlotsError` with nothing changed.
        """
        self._check_active(lease)
        if lease.waiting:
            self.load_back.check_ready(lease)
        packed = encode_tokens(tokens)
        start = lease.num_tokens
        end = start + len(packed) // TOKEN_BYTES
        # bench sim (896 tokens, p16): counts, not read-only views (0.78 -> 0.06 us), and no
        # allocation round inside the last page: extend p50 13.5 -> 3.3-4.7 us
        fresh = max(0, self.pages_for(end) - lease.num_allocated)
        if fresh:
            needs = self._needs(fresh)
            self.room.ensure_room(needs)
            parts = self.room.allocate(needs)  # first: an engine's allocator may raise
            used = lease.record(packed, fresh)
            for side, buffer, part in zip(self.sides, lease.buffers, parts):
                side.append(buffer, used, part)
        else:
            lease.record(packed, 0)
        new_slots: np.ndarray = lease.buffers[PRIMARY].slots[start:end].copy()
        return new_slots

    def slide_window(self, lease: Lease, computed: int | None = None) -> int:
        """Release the lease's own pages of each windowed component (SWA, chunked local)
        that lie wholly before the window (``window_start``) of the longest prefix of its
        first ``computed`` tokens (default: all of them) the tree could cache — whole pages
        of key. Those left the window of every token still to compute and of anything the
        lease will cache, and are cached as tombstones. Call it with the number of tokens
        whose KV the engine has computed. Returns the slots released. Raises
        :class:`LeaseError` on a cache without a windowed component."""
        self._check_active(lease)
        windowed = [side for side in self.sides if side.windowed]
        if not windowed:
            raise LeaseError("this cache has no windowed component")
        computed = as_int("computed", lease.num_tokens if computed is None else computed, 0,
                          lease.num_tokens)
        cacheable = len(self._key(lease.key_tokens(), computed)) // self.tree.unit
        released = 0
        for side in windowed:
            slots = side.slide(lease.buffers[side.index], cacheable, lease.tree_owned)
            if len(slots):
                self.pools[side.index].free(slots)
                released += len(slots)
        return released

    def checkpoint(self, lease: Lease, position: int) -> int:
        """Allocate a state slot for the state after ``position`` tokens (a page boundary
        past what the tree holds for the lease); the engine saves the state there and the
        tree takes it at commit/finish. Raises :class:`LeaseError` on a cache without a
        state component or for a lease still waiting for its load-back,
        :class:`OutOfSlotsError` when no state slot can be freed."""
        self._check_active(lease)
        if lease.waiting:
            self.load_back.check_ready(lease)
        if self._state is None:
            raise LeaseError("this cache has no state component")
        position = as_int("position", position, lease.tree_owned + 1, lease.num_tokens)
        buffer = lease.buffers[self._state]
        if position % self.page_size or position in buffer.checkpoints:
            raise InvalidArgumentError(
                f"checkpoint position {position} is not a page boundary or already saved")
        needs = self._needs(0, states=1)
        self.room.ensure_room(needs)
        slot = int(self.room.allocate(needs)[self._state][0])
        buffer.checkpoints[position] = slot
        return slot

    def commit(self, lease: Lease, length: int | None = None) -> int:
        """Insert the first ``length`` tokens (default: all so far) of an active lease and
        move its lock to the end of what the tree now holds (chunked prefill); with a state
        component that is the last checkpoint. Duplicate slots are freed and the lease's
        slots are rewritten to the tree's. Returns how many tokens the tree holds for it."""
        self._check_active(lease)
        if lease.waiting:
            self.load_back.check_ready(lease)
        num_tokens = lease.num_tokens
        if length is None:
            length = num_tokens
        elif type(length) is not int or not 0 <= length <= num_tokens:
            # bench sim (896 tokens, p16): a plain int in range, two tests (0.09 -> 0.05 us)
            length = as_int("length", length, 0, num_tokens)
        result = self._insert(lease, length)
        if result is not None and result.node is not None and result.length > lease.tree_owned:
            self._move_lock(lease, result.node, result.length, result.freed)
        return lease.tree_owned

    def _move_lock(self, lease: Lease, node: Node, length: int,
                   duplicates: list[np.ndarray]) -> None:
        """Lock ``[0, length)`` at ``node`` instead, and lend the lease the tree's slots
        there. Where the insert freed none of a component's slots as duplicates the tree
        took the lease's own, so its buffer is the tree's already up to ``length``."""
        old_lock = lease.lock
        # bench sim (896 tokens, p16): the lock moves down, no two whole-path walks
        new_lock = self.tree.lock(node, length) if old_lock is None \
            else self.tree.move_down(old_lock, node, length)
        new_lock.lease = lease.id
        lease.lock = new_lock
        owned = lease.tree_owned
        # bench sim (896 tokens, p16): no values read back where nothing was a duplicate
        # (with relend's partial rewrite: commit p50 44-49 -> 31-36 us)
        for side, buffer, freed in zip(self.sides, lease.buffers, duplicates):
            side.relend(buffer, self.tree, node, length, new_lock,
                        owned if len(freed) else length)
        lease.tree_owned = length

    def finish(self, lease: Lease) -> int:
        """Insert every whole page of an active lease (with a state component: up to its
        last checkpoint), free its duplicates, its tail and its states, and unlock. Returns
        how many of its tokens the tree now holds."""
        self._check_active(lease)
        if lease.waiting:  # bench admit_finish (short, p1): one test, 0.05 -> 0.02 us
            self.load_back.check_ready(lease)
        result = self._insert(lease, lease.num_tokens)
        cached = lease.tree_owned if result is None else max(result.length, lease.tree_owned)
        self._end_lease(lease, cached, LeaseState.FINISHED, "finished")
        return cached

    def abort(self, lease: Lease) -> None:
        """Drop an active lease: free every slot it holds and unlock what it borrowed."""
        self._check_active(lease)
        self._end_lease(lease, lease.tree_owned, LeaseState.ABORTED, "aborted")

    def _insert(self, lease: Lease, length: int) -> TreeInsert | None:
        """Insert the lease's first ``length`` tokens (whole pages); ``None`` when there is
        nothing beyond what the tree already holds for it."""
        elements = length - 1 if self.config.bigram else length  # the key's, whole pages
        key_length = elements - elements % self.page_size
        if key_length <= lease.tree_owned:
            return None  # bench admit_finish (short, p16): no key built, 1.8 -> 0.26 us
        # bench sim: without bigrams (elements == length) the key is the whole pages'
        # tokens, copied once
        key = lease.key_tokens(key_length) if elements == length else self._key(
            lease.key_tokens(), length)
        inputs = [side.insert_input(buffer, key_length)
                  for side, buffer in zip(self.sides, lease.buffers)]
        # the lease's lock node ends where its borrowed prefix does
        result = self.tree.insert(key, inputs, lease.namespace, borrowed=lease.tree_owned,
                                  priority=lease.priority, ttl=lease.ttl, known=lease.lock)
        self.pools.free_all(result.freed)
        counters = self.counters
        for index in self._checkpointing:  # bench release: only the sides that need it
            counters["checkpoints_created"] += self.sides[index].after_insert(
                lease.buffers[index], result.length, result.freed[index])
        counters["inserted_tokens"] += result.new_length
        if self.tiered:
            self.tiers.inserted(result.node)
        return result
