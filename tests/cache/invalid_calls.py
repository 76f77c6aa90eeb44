"""Invalid calls of every class issue 11 names, mixed into a stateful machine's valid traffic.

:class:`InvalidCalls` adds one rule to a hypothesis ``RuleBasedStateMachine``: draw a call
the cache must refuse — a spent, copied or foreign ``Allocation``; a copied ``Lease``; a
numpy integer scalar out of range or a numpy float where an int belongs; a flag that is no
bool; a budget for a component the cache lacks; a byte buffer, ``torch.Size`` or a tensor
that does not convert as tokens; an unhashable namespace part — make it, and check the typed
error, that the snapshot is unchanged, that no slot is owned twice, and the full audit.
The machine provides :meth:`subject` (its cache) and :meth:`live_leases`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import rule

from radixkv import Allocation, PrefixCache
from radixkv.cache import Lease
from radixkv.cache.inspection import held_by_lease
from radixkv.errors import (
    AllocationError,
    InvalidArgumentError,
    InvalidNamespaceError,
    InvalidSlotsError,
    InvalidTokensError,
    LeaseError,
    RadixKVError,
)

from ..audited import assert_refused
from ..torchlike import FakeTensor, Size

INT_TYPES = (int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint64)
"""Every way a caller may spell an integer; values drawn fit each (0..127)."""

Call = tuple[Callable[[], Any], type[RadixKVError]]


def numeric(data: st.DataObject, value: int) -> Any:
    """``value`` as a Python int or a numpy integer scalar of a type that can hold it."""
    fits = [t for t in INT_TYPES if t is int or np.iinfo(t).min <= value <= np.iinfo(t).max]
    kind = data.draw(st.sampled_from(fits), label="int type")
    return kind(value)


def has_state(cache: PrefixCache) -> bool:
    """Whether ``cache`` has a state component (MAMBA)."""
    return any(not side.per_token for side in cache.sides)


def assert_no_slot_twice(cache: PrefixCache) -> None:
    """Per pool: tree values, lease-held and caller-held slots are disjoint, allocated, and
    with the free slots make up the capacity."""
    for index, pool in enumerate(cache.pools.pools):
        parts = [cache.tree.all_values(index), cache.detached[index].held()]
        parts += [held_by_lease(cache, lease)[index] for lease in cache.leases()]
        held = np.concatenate(parts)
        assert len(np.unique(held)) == len(held), f"{pool.name}: a slot is owned twice"
        assert pool.is_allocated(held).all(), f"{pool.name}: a held slot is free"
        assert pool.available + len(held) == pool.capacity, f"{pool.name}: slots leaked"


class InvalidCalls:
    """Mixin of the ``invalid_call`` rule (see the module docstring)."""

    def subject(self) -> PrefixCache:
        raise NotImplementedError

    def live_leases(self) -> list[Lease]:
        raise NotImplementedError

    @rule(data=st.data())
    def invalid_call(self, data: st.DataObject) -> None:
        cache = self.subject()
        on_lease = bool(self.live_leases()) and data.draw(st.booleans(), label="on a lease?")
        makers = self._makers(cache, on_lease)
        kind = data.draw(st.sampled_from(sorted(makers)), label="invalid call")
        made = makers[kind](cache, data)
        if made is None:  # not possible in this state (a pool is full, no lease)
            return
        (call, error), cleanup = made
        assert_refused(cache, error, call)
        assert_no_slot_twice(cache)
        cache.check_invariants()
        if cleanup is not None:
            cleanup()

    def _makers(self, cache: PrefixCache, on_lease: bool) -> dict[str, Any]:
        if on_lease:
            return {"copied-lease": self._copied_lease, "lease-numbers": self._lease_numbers}
        makers: dict[str, Any] = {
            "spent-allocation": self._spent_allocation,
            "foreign-allocation": self._foreign_allocation,
            "copied-allocation": self._copied_allocation,
            "numpy-out-of-range": self._out_of_range,
            "not-an-int": self._not_an_int,
            "state-flag": self._state_flag,
            "tokens": self._tokens,
            "namespace": self._namespace,
        }
        if len(cache.tree.components) < 3:
            makers["absent-component"] = self._absent_component
        if len(cache.tree.components) == 1:
            makers["part-of-allocation"] = self._part_of_allocation
        return makers

    # ------------------------------------------------------------------ handles

    def _allocate(self, cache: PrefixCache, data: st.DataObject) -> Allocation | None:
        """A valid allocation of 1..2 pages, without evicting (``None`` when short)."""
        pages = data.draw(st.integers(1, 2), label="pages")
        state = has_state(cache) and data.draw(st.booleans(), label="with state")
        return cache.allocate(pages * cache.page_size, state=state, evict=False)

    def _use(self, cache: PrefixCache, held: Allocation, data: st.DataObject) -> Call:
        tokens = list(range(len(held.full)))
        if data.draw(st.booleans(), label="insert?"):
            return (lambda: cache.insert(tokens, held)), AllocationError
        return (lambda: cache.release(held)), AllocationError

    def _spent_allocation(self, cache: PrefixCache, data: st.DataObject) -> Any:
        held = self._allocate(cache, data)
        if held is None:
            return None
        cache.release(held)  # valid; then its slots may go to the next holder
        again = self._allocate(cache, data)
        cleanup = None if again is None else (lambda: cache.release(again))
        return self._use(cache, held, data), cleanup

    def _foreign_allocation(self, cache: PrefixCache, data: st.DataObject) -> Any:
        other = PrefixCache(cache.config)  # the same slot ids
        held = self._allocate(other, data)
        assert held is not None
        return self._use(cache, held, data), None

    def _copied_allocation(self, cache: PrefixCache, data: st.DataObject) -> Any:
        held = self._allocate(cache, data)
        if held is None:
            return None
        clone = data.draw(st.sampled_from([copy.copy, copy.deepcopy]), label="copy")
        return self._use(cache, clone(held), data), (lambda: cache.release(held))

    def _part_of_allocation(self, cache: PrefixCache, data: st.DataObject) -> Any:
        pages = cache.page_size * 2
        held = cache.allocate(pages, evict=False)
        if held is None:
            return None
        part = held.full[: cache.page_size].copy()
        return ((lambda: cache.release(part)), InvalidSlotsError), (lambda: cache.release(held))

    def _copied_lease(self, cache: PrefixCache, data: st.DataObject) -> Any:
        lease = data.draw(st.sampled_from(self.live_leases()), label="lease")
        twin = data.draw(st.sampled_from([copy.copy, copy.deepcopy]), label="copy")(lease)
        op = data.draw(st.sampled_from(["finish", "abort", "commit", "extend"]), label="op")
        if op == "extend":
            return ((lambda: cache.extend(twin, [1])), LeaseError), None
        return ((lambda: getattr(cache, op)(twin)), LeaseError), None

    # ------------------------------------------------------------------ numbers and flags

    def _out_of_range(self, cache: PrefixCache, data: st.DataObject) -> Any:
        signed = data.draw(st.sampled_from([int, np.int8, np.int16, np.int32, np.int64]),
                           label="int type")
        minus = signed(-data.draw(st.integers(1, 100), label="below zero"))
        calls: list[Call] = [
            ((lambda: cache.evict(minus)), InvalidArgumentError),
            ((lambda: cache.allocate(minus)), InvalidArgumentError),
            ((lambda: cache.admit([1, 2], max_match=minus)), InvalidArgumentError),
            ((lambda: cache.admit([1, 2], ttl=minus)), InvalidArgumentError),
        ]
        return data.draw(st.sampled_from(calls), label="call"), None

    def _not_an_int(self, cache: PrefixCache, data: st.DataObject) -> Any:
        value = data.draw(st.sampled_from([np.float32(2.0), 2.0, np.bool_(True), True, "2"]),
                          label="not an int")
        calls: list[Call] = [
            ((lambda: cache.evict(value)), InvalidArgumentError),
            ((lambda: cache.allocate(value)), InvalidArgumentError),
            ((lambda: cache.admit([1, 2], priority=value)), InvalidArgumentError),
        ]
        return data.draw(st.sampled_from(calls), label="call"), None

    def _state_flag(self, cache: PrefixCache, data: st.DataObject) -> Any:
        flag = data.draw(st.sampled_from([-1, 2, 1, 0, 1.5, np.int64(1), None]), label="flag")
        name = data.draw(st.sampled_from(["state", "evict"]), label="flag name")
        return ((lambda: cache.allocate(cache.page_size, **{name: flag})),
                InvalidArgumentError), None

    def _absent_component(self, cache: PrefixCache, data: st.DataObject) -> Any:
        missing = sorted({"swa", "chunked", "mamba", "sinks"} - set(cache.names))
        name = data.draw(st.sampled_from(missing), label="component")
        budget = numeric(data, data.draw(st.integers(1, 100), label="budget"))
        return ((lambda: cache.evict(**{name: budget})), InvalidArgumentError), None

    def _lease_numbers(self, cache: PrefixCache, data: st.DataObject) -> Any:
        lease = data.draw(st.sampled_from(self.live_leases()), label="lease")
        beyond = np.int64(lease.num_tokens + data.draw(st.integers(1, 3), label="beyond"))
        calls: list[Call] = [((lambda: cache.commit(lease, beyond)), InvalidArgumentError)]
        if any(side.windowed for side in cache.sides):
            calls.append(((lambda: cache.slide_window(lease, beyond)), InvalidArgumentError))
        if has_state(cache):  # at or before what the tree holds: refused
            early = np.int16(lease.tree_owned)
            calls.append(((lambda: cache.checkpoint(lease, early)), InvalidArgumentError))
        return data.draw(st.sampled_from(calls), label="call"), None

    # ------------------------------------------------------------------ tokens, namespaces

    def _tokens(self, cache: PrefixCache, data: st.DataObject) -> Any:
        tokens = data.draw(st.sampled_from([
            bytearray(b"\x01\x02"), memoryview(b"\x01\x02"), b"\x01", Size([2, 3]),
            FakeTensor(None), FakeTensor(np.array([1, -1])),
        ]), label="tokens")
        calls: list[Call] = [((lambda: cache.admit(tokens)), InvalidTokensError),
                             ((lambda: cache.match(tokens)), InvalidTokensError)]
        leases = self.live_leases()
        if leases:
            calls.append(((lambda: cache.extend(leases[0], tokens)), InvalidTokensError))
        return data.draw(st.sampled_from(calls), label="call"), None

    def _namespace(self, cache: PrefixCache, data: st.DataObject) -> Any:
        space = data.draw(st.sampled_from([([1], None), (None, {"salt": 1}), ({1}, "x"),
                                           (np.int64(1), None)]), label="namespace")
        calls: list[Call] = [((lambda: cache.admit([1, 2], space)), InvalidNamespaceError),
                             ((lambda: cache.match([1, 2], space)), InvalidNamespaceError)]
        return data.draw(st.sampled_from(calls), label="call"), None
