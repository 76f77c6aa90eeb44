"""The request life-cycle of a PrefixCache: leases from admission to finish or abort."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..components.swa import WindowInput
from ..core.keys import encode_tokens
from ..core.node import Node
from ..core.types import TreeInsert, TreeMatch
from ..errors import InvalidArgumentError, LeaseError
from .base import FULL, CacheBase, _check_int
from .lease import Lease, LeaseState


class Lifecycle(CacheBase):
    """admit → extend / commit / checkpoint / slide_window → finish or abort."""

    # ------------------------------------------------------------------ admission

    def admit(
        self, tokens: Any, namespace: Any = None, *, priority: int = 0, ttl: int | None = None,
        max_match: int | None = None,
    ) -> Lease:
        """Admit a request: match its prompt (reusing at most ``max_match`` tokens, e.g.
        ``len(prompt) - 1`` so the engine computes the last token's logits), lock the cached
        prefix, allocate the rest (and, with MAMBA, a working state slot). Evicts as needed.
        Raises :class:`OutOfSlotsError` (nothing changed, not even recency) when even evicting
        everything evictable cannot make room."""
        packed, space = self._request(tokens, namespace, priority, ttl)
        num_tokens = len(packed) // 4
        if max_match is not None:
            _check_int("max_match", max_match, minimum=0)
            max_match += 1 if self.config.bigram else 0  # a bigram spans the next token
        key = self._key(packed, max_match)
        found = self.tree.match(key, space, touch=False)
        needs = self._needs(self.pages_for(num_tokens - found.length), state=1)
        self.pools.ensure_room(needs, self.tree.lock_preview(found.node, found.length))
        self.tree.touch(found)
        self._count_match(num_tokens, found, key, space,
                          None if max_match is None else self._key(packed))
        lock = None if found.node is None else self.tree.lock(found.node, found.length)
        lease = Lease(self._owner, next(self._lease_ids), space, found.length, lock,
                      priority, ttl)
        if lock is not None:
            lock.lease = lease.id
        self._fill_admitted(lease, packed, found, self.pools.allocate(needs))
        self._leases[lease.id] = lease
        self.counters["admitted"] += 1
        return lease

    def _fill_admitted(
        self, lease: Lease, packed: bytes, found: TreeMatch, fresh: list[np.ndarray]
    ) -> None:
        full = np.concatenate((self.tree.path_values(found, FULL), fresh[FULL]))
        swa = None
        if self.swa is not None:
            lease.window_start = self._window_start(lease)
            swa = np.zeros(len(full), dtype=np.int64)
            swa[lease.window_start : found.length] = self.tree.path_values(
                found, self.swa, lease.window_start)
            swa[found.length :] = fresh[self.swa]
        lease.append(packed, full, swa)
        if self.mamba is not None:
            lease.state_slot = int(fresh[self.mamba][0])
            lease.copy_state_from = self._state_at(found)
            lease.checkpoint_hints = self._hints(found, len(packed) // 4)
            self.counters["checkpoints_used"] += lease.copy_state_from is not None

    def _window_start(self, lease: Lease) -> int:
        """First position of the SWA window the lease's lock pins."""
        assert self.swa is not None
        return 0 if lease.lock is None else lease.lock.boundaries[self.swa]

    # ------------------------------------------------------------------ running requests

    def extend(self, lease: Lease, tokens: Any) -> np.ndarray:
        """Append decode tokens to an active lease; return their FULL slots (a copy).

        Allocates a page (FULL, and SWA alongside) only when the lease's last page is full,
        evicting if needed. Raises :class:`LeaseError`, :class:`InvalidTokensError` or
        :class:`OutOfSlotsError` with nothing changed.
        """
        self._check_active(lease)
        packed = encode_tokens(tokens)
        start = lease.num_tokens
        fresh = max(0, self.pages_for(start + len(packed) // 4) - len(lease.allocated_slots))
        needs = self._needs(fresh)
        self.pools.ensure_room(needs)
        slots = self.pools.allocate(needs)
        lease.append(packed, slots[FULL], None if self.swa is None else slots[self.swa])
        new_slots: np.ndarray = lease.slots[start:].copy()
        return new_slots

    def slide_window(self, lease: Lease, computed: int | None = None) -> int:
        """Release the lease's own SWA pages that lie wholly before the last W tokens of the
        longest prefix of its first ``computed`` tokens (default: all of them) the tree could
        cache — whole pages of key. Those left the window of every token still to compute
        and of anything the lease will cache, and are cached as tombstones. Call it with the
        number of tokens whose KV the engine has computed. Returns the slots released."""
        self._check_active(lease)
        if self.swa is None:
            raise LeaseError("this cache has no SWA component")
        computed = lease.num_tokens if computed is None else computed
        _check_int("computed", computed, minimum=0, maximum=lease.num_tokens)
        window = self.config.sliding_window
        assert window is not None
        cacheable = len(self._key(lease.key_tokens(), computed)) // self.tree.unit
        dropped = max(0, cacheable - window)
        dropped -= dropped % self.page_size
        held_from = max(lease.tree_owned, lease.swa_dropped)
        if dropped <= lease.swa_dropped:
            return 0
        released = lease.swa_buffer()[held_from:dropped] if dropped > held_from else None
        if released is not None:
            self.pools[self.swa].free(released)
        lease.swa_dropped = dropped
        return 0 if released is None else len(released)

    def checkpoint(self, lease: Lease, position: int) -> int:
        """Allocate a state slot for the MAMBA state after ``position`` tokens (a page
        boundary past what the tree holds for the lease); the engine saves the state there
        and the tree takes it at commit/finish. Raises :class:`OutOfSlotsError` when no
        state slot can be freed."""
        self._check_active(lease)
        if self.mamba is None:
            raise LeaseError("this cache has no MAMBA component")
        _check_int("position", position, minimum=lease.tree_owned + 1,
                   maximum=lease.num_tokens)
        if position % self.page_size or position in lease.checkpoints:
            raise InvalidArgumentError(
                f"checkpoint position {position} is not a page boundary or already saved")
        needs = self._needs(0, state=1)
        self.pools.ensure_room(needs)
        slot = int(self.pools.allocate(needs)[self.mamba][0])
        lease.checkpoints[position] = slot
        return slot

    def commit(self, lease: Lease, length: int | None = None) -> int:
        """Insert the first ``length`` tokens (default: all so far) of an active lease and
        move its lock to the end of what the tree now holds (chunked prefill); with MAMBA
        that is the last checkpoint. Duplicate slots are freed and the lease's slots are
        rewritten to the tree's. Returns how many tokens the tree holds for the lease."""
        self._check_active(lease)
        length = lease.num_tokens if length is None else length
        _check_int("length", length, minimum=0, maximum=lease.num_tokens)
        result = self._insert(lease, length)
        if result is not None and result.length > lease.tree_owned:
            self._move_lock(lease, result.node, result.length)
        return lease.tree_owned

    def _move_lock(self, lease: Lease, node: Node, length: int) -> None:
        new_lock = self.tree.lock(node, length)
        new_lock.lease = lease.id
        self._unlock(lease)
        lease.lock = new_lock
        lease.adopt_prefix(self.tree.values_between(node, FULL, 0)[:length])
        if self.swa is not None:
            lease.window_start = self._window_start(lease)
            start = lease.swa_start
            if start < length:
                lease.set_swa(start, self.tree.values_between(node, self.swa, start))

    def finish(self, lease: Lease) -> int:
        """Insert every whole page of an active lease (with MAMBA: up to its last
        checkpoint), free its duplicates, its tail and its states, and unlock. Returns how
        many of its tokens the tree now holds."""
        self._check_active(lease)
        result = self._insert(lease, lease.num_tokens)
        cached = lease.tree_owned if result is None else max(result.length, lease.tree_owned)
        self._release(lease, cached)
        self._close(lease, LeaseState.FINISHED, "finished")
        return cached

    def abort(self, lease: Lease) -> None:
        """Drop an active lease: free every slot it holds and unlock what it borrowed."""
        self._check_active(lease)
        self._release(lease, lease.tree_owned)
        self._close(lease, LeaseState.ABORTED, "aborted")

    def _release(self, lease: Lease, cached: int) -> None:
        """Free what the lease holds beyond the first ``cached`` tokens."""
        freed: list[np.ndarray] = [lease.allocated_slots[cached:]]
        if self.swa is not None:
            freed.append(lease.swa_buffer()[max(cached, lease.swa_dropped):])
        if self.mamba is not None:
            states = [*lease.checkpoints.values(), lease.state_slot]
            freed.append(np.array([s for s in states if s is not None], dtype=np.int64))
            lease.checkpoints, lease.state_slot = {}, None
        self.pools.free_all(freed)

    def _insert(self, lease: Lease, length: int) -> TreeInsert | None:
        """Insert the lease's first ``length`` tokens (whole pages); ``None`` when there is
        nothing beyond what the tree already holds for it."""
        key = self._key(lease.key_tokens(), length)
        key_length = len(key) // self.tree.unit
        if key_length <= lease.tree_owned:
            return None
        result = self.tree.insert(
            key, self._inputs(lease, key_length), lease.namespace,
            borrowed=lease.tree_owned, priority=lease.priority, ttl=lease.ttl,
        )
        self.pools.free_all(result.freed)
        if self.mamba is not None:
            used = [p for p in lease.checkpoints if p <= result.length]
            self.counters["checkpoints_created"] += len(used) - len(result.freed[self.mamba])
            for position in used:
                del lease.checkpoints[position]
        self.counters["inserted_tokens"] += result.new_length
        return result

    def _inputs(self, lease: Lease, key_length: int) -> list[object]:
        inputs: list[object] = [lease.allocated_slots[:key_length]]
        if self.swa is not None:
            slots = lease.swa_buffer()[:key_length]
            inputs.append(WindowInput(slots, min(lease.swa_dropped, key_length)))
        if self.mamba is not None:
            inputs.append({p: s for p, s in lease.checkpoints.items() if p <= key_length})
        return inputs

    def _close(self, lease: Lease, state: LeaseState, counter: str) -> None:
        self._unlock(lease)
        lease.state = state
        del self._leases[lease.id]
        self.counters[counter] += 1

    def _unlock(self, lease: Lease) -> None:
        if lease.lock is not None:
            self.tree.unlock(lease.lock)
            lease.lock = None

    def _check_active(self, lease: Lease) -> None:
        if not isinstance(lease, Lease):
            raise LeaseError(f"expected a Lease, got {type(lease).__name__}")
        if lease.owner is not self._owner:
            raise LeaseError(f"lease {lease.id} was issued by another cache")
        if lease.state is not LeaseState.ACTIVE:
            raise LeaseError(f"lease {lease.id} is {lease.state.value}, not active")

