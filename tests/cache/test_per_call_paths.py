"""The cheap common cases of the request path (issue 16, item 2) agree with the general
ones: a fully cached admit lends exactly the tree's slots, an extend inside the last page
allocates nothing, a commit rewrites only the lease's new part yet ends with the tree's
slots everywhere, an issued allocation's slots cannot change after issue, and bad input on
each of these paths still raises with nothing changed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from radixkv import ChunkedLocal, FullAttention
from radixkv.core.node import Node
from radixkv.core.types import TreeMatch
from radixkv.errors import (
    AllocationError,
    InvalidArgumentError,
    InvalidSlotsError,
    InvalidTokensError,
)

from ..audited import AuditedCache, assert_refused

PAGES = (1, 4)
HYBRIDS: dict[str, dict[str, Any]] = {
    "full": {},
    "full+swa": {"components": ("full", "swa"), "sliding_window": 8},
    "full+chunked": {"components": (FullAttention(), ChunkedLocal(chunk=8))},
    "full+mamba": {"components": ("full", "mamba"), "mamba_track_interval": 4,
                   "mamba_states": 64},
}


def tokens(n: int, first: int = 1) -> list[int]:
    return list(range(first, first + n))


def make(page: int, combo: str = "full") -> AuditedCache:
    return AuditedCache(capacity=512, page_size=page, **HYBRIDS[combo])


def cache_prompt(cache: AuditedCache, prompt: list[int]) -> None:
    """Cache ``prompt`` through a lease (with a checkpoint at its end for MAMBA)."""
    lease = cache.admit(prompt)
    end = len(prompt) - len(prompt) % cache.page_size
    if lease.state_slot is not None and end > lease.tree_owned:
        cache.checkpoint(lease, end)
    cache.finish(lease)


def tree_slots(cache: AuditedCache, prompt: list[int], name: str) -> np.ndarray:
    """The tree's slots of component ``name`` for the whole prefix ``prompt`` (a copy)."""
    found = cache.tree.match(cache._key(np.array(prompt, dtype="<u4").tobytes()),
                             cache.namespace_of(None), touch=False)
    index = cache.names.index(name)
    return cache.tree.path_values(found, index).copy()


# ---------------------------------------------------------------------- admit (lend)


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", ["full", "full+swa", "full+chunked"])
@pytest.mark.parametrize("length", [12, 40])
def test_a_fully_cached_admit_lends_exactly_the_tree_slots(page: int, combo: str,
                                                           length: int) -> None:
    """The tree holds the prompt in two nodes, [0, 8) and the rest. 12 tokens: the SWA
    window reaches the first node (lent from 0: the one-concatenation path), the chunked
    one starts at 8 (the general path); 40 tokens: the SWA window starts in the second
    node and the chunked one is empty (both the general path)."""
    cache = make(page, combo)
    prompt = tokens(length)
    cache_prompt(cache, prompt[:8])
    cache_prompt(cache, prompt)
    cached = length - length % page
    lease = cache.admit(prompt)
    assert lease.cached_length == cached
    assert lease.slots[:cached].tolist() == tree_slots(cache, prompt[:cached], "full").tolist()
    for name in cache.names[1:]:
        start = lease.start_of(name)
        lent = lease.slots_of(name)[: cached - start]
        assert lent.tolist() == tree_slots(cache, prompt[:cached], name)[start:].tolist()
    assert cache.finish(lease) == cached
    assert cache.stats().components["full"].protected == 0


@pytest.mark.parametrize("page", PAGES)
def test_an_admit_capped_inside_a_node_lends_the_prefix_and_fresh_slots(page: int) -> None:
    cache = make(page)
    prompt = tokens(32)
    cache_prompt(cache, prompt)
    lease = cache.admit(prompt, max_match=2 * page)
    assert lease.cached_length == 2 * page
    assert lease.slots[: 2 * page].tolist() == tree_slots(cache, prompt[: 2 * page],
                                                          "full").tolist()
    own = lease.own_slots
    assert len(own) == cache.pages_for(32 - 2 * page)
    assert not set(own.tolist()) & set(tree_slots(cache, prompt, "full").tolist())
    cache.abort(lease)


# ---------------------------------------------------------------------- extend


@pytest.mark.parametrize("page", (4, 16))
def test_an_extend_inside_the_last_page_allocates_nothing(page: int) -> None:
    cache = make(page, "full+swa")
    lease = cache.admit(tokens(page + 1))
    available = [cache.pools[i].available for i in range(2)]
    slots = cache.extend(lease, [90, 91])
    assert [cache.pools[i].available for i in range(2)] == available
    assert slots.tolist() == lease.slots[page + 1 : page + 3].tolist()
    slots[0] = -1  # a copy: the lease keeps its own
    assert lease.slots[page + 1] != -1
    assert cache.extend(lease, tokens(page, 100)).tolist() == lease.slots[page + 3 :].tolist()
    assert [cache.pools[i].available for i in range(2)] == [a - page for a in available]
    assert cache.finish(lease) == 2 * page


def test_an_extend_with_bad_tokens_inside_the_last_page_changes_nothing() -> None:
    cache = make(4)
    lease = cache.admit(tokens(5))
    assert_refused(cache, InvalidTokensError, lambda: cache.extend(lease, [-1]))
    assert_refused(cache, InvalidTokensError, lambda: cache.extend(lease, [1.5]))
    assert lease.num_tokens == 5
    cache.finish(lease)


@pytest.mark.parametrize("page", (1, 16))
def test_a_long_extend_grows_the_buffer_keeping_every_slot_its_pages_hold(page: int) -> None:
    """An extend past the room a lent buffer has (16 tokens) grows it: every slot of the
    lease's pages is still its own and allocated, and finish caches them as they were."""
    cache = make(page)
    cache_prompt(cache, tokens(2 * page))
    lease = cache.admit(tokens(2 * page + 3))
    before = lease.slots.tolist()
    added = cache.extend(lease, tokens(100, 500)).tolist()
    assert lease.slots.tolist() == before + added
    held = lease.allocated_slots
    assert len(held) == -(-(2 * page + 103) // page) * page
    assert len(set(held.tolist())) == len(held) and cache.pool.is_allocated(held).all()
    whole = (2 * page + 103) // page * page
    kept = lease.slots[:whole].tolist()
    assert cache.finish(lease) == whole
    assert tree_slots(cache, [*tokens(2 * page + 3), *tokens(100, 500)][:whole],
                      "full").tolist() == kept


def test_a_lease_gives_the_packed_tokens_of_any_prefix() -> None:
    cache = make(4)
    lease = cache.admit(tokens(9))
    cache.extend(lease, [70, 71, 72])
    packed = lease.key_tokens()
    assert packed == np.array([*tokens(9), 70, 71, 72], dtype="<u4").tobytes()
    for length in (0, 1, 8, 12):
        assert lease.key_tokens(length) == packed[: 4 * length]
    cache.abort(lease)


# ---------------------------------------------------------------------- commit


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", ["full", "full+swa", "full+chunked"])
def test_commits_in_steps_leave_the_lease_with_the_tree_slots(page: int, combo: str) -> None:
    """Chunked prefill through chunk boundaries (an empty chunked window, then one that
    starts before the previous commit's end); check_invariants compares the lent slots with
    the tree's after every call."""
    cache = make(page, combo)
    prompt = tokens(48)
    cache_prompt(cache, prompt[:20])
    lease = cache.admit(prompt)
    for end in (21, 24, 30, 32, 40, 48):
        held = cache.commit(lease, end)
        assert held == end - end % page
        assert lease.slots[:held].tolist() == tree_slots(cache, prompt[:held], "full").tolist()
        for name in cache.names[1:]:
            start = lease.start_of(name)
            if start < held:
                lent = lease.slots_of(name)[: held - start]
                assert lent.tolist() == tree_slots(cache, prompt[:held], name)[start:].tolist()
    assert cache.finish(lease) == 48


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", ["full", "full+swa", "full+chunked"])
def test_a_commit_of_tokens_another_request_cached_meanwhile_lends_the_tree_slots(
        page: int, combo: str) -> None:
    """The commit's insert finds the tree holding the tokens (duplicates: the lease's own
    slots are freed), so the lease must read the tree's slots back; without duplicates
    (the first commit) the tree took the lease's own."""
    cache = make(page, combo)
    prompt = tokens(32)
    first, second = cache.admit(prompt), cache.admit(prompt)
    own = second.slots.copy()
    assert cache.commit(first, 16) == 16
    assert first.slots.tolist()[:16] == tree_slots(cache, prompt[:16], "full").tolist()
    cache.finish(first)
    assert cache.commit(second, 32) == 32
    assert second.slots.tolist() == tree_slots(cache, prompt, "full").tolist() != own.tolist()
    for name in cache.names[1:]:
        start = second.start_of(name)
        lent = second.slots_of(name)[: 32 - start]
        assert lent.tolist() == tree_slots(cache, prompt, name)[start:].tolist()
    assert cache.finish(second) == 32


@pytest.mark.parametrize("length", [True, 1.0, "3", -1, 99])
def test_commit_refuses_a_bad_length_with_nothing_changed(length: object) -> None:
    cache = make(4)
    lease = cache.admit(tokens(10))
    assert_refused(cache, InvalidArgumentError, lambda: cache.commit(lease, length))  # type: ignore[arg-type]
    assert cache.commit(lease, np.int16(8)) == 8
    cache.finish(lease)


# ---------------------------------------------------------------------- allocate / insert


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("combo", ["full", "full+swa", "full+mamba"])
def test_an_issued_allocation_cannot_change_its_slots(page: int, combo: str) -> None:
    cache = make(page, combo)
    held = cache.allocate(3 * page, state=combo == "full+mamba")
    assert held is not None
    for part in held.parts:
        with pytest.raises(ValueError):
            part.setflags(write=True)
        if len(part):
            with pytest.raises(ValueError, match="read-only"):
                part[0] = 0
    with pytest.raises(AttributeError):
        held.parts = (np.arange(3 * page),)  # type: ignore[misc]
    assert cache.insert(tokens(3 * page), held) == 3 * page
    assert cache.match(tokens(3 * page)).slots.tolist() == held.full.tolist()


@pytest.mark.parametrize("page", PAGES)
def test_an_issued_allocation_with_the_wrong_token_count_is_refused(page: int) -> None:
    cache = make(page)
    held = cache.allocate(2 * page)
    assert held is not None
    assert_refused(cache, InvalidSlotsError, lambda: cache.insert(tokens(3 * page), held),
                   "expected")
    assert_refused(cache, InvalidSlotsError, lambda: cache.insert(tokens(page), held),
                   "expected")
    assert cache.insert(tokens(2 * page), held) == 2 * page
    assert_refused(cache, AllocationError, lambda: cache.insert(tokens(2 * page), held),
                   "already inserted")
    assert_refused(cache, AllocationError, lambda: cache.release(held), "already inserted")


@pytest.mark.parametrize("page", PAGES)
def test_inserting_after_a_shared_prefix_frees_exactly_the_duplicates(page: int) -> None:
    cache = make(page)
    first = cache.allocate(8 * page)
    assert first is not None
    cache.insert(tokens(8 * page), first)
    available = cache.pool.available
    tail = 1 if page > 1 else 0  # a partial page, dropped
    second = cache.allocate(12 * page + tail)
    assert second is not None
    prompt = tokens(8 * page) + tokens(4 * page + tail, 1000)
    assert cache.insert(prompt, second) == 12 * page
    # 8 pages were duplicates and the partial tail page went back: 4 new pages are kept
    assert cache.pool.available == available - 4 * page
    assert cache.match(prompt).slots.tolist() == (
        first.full.tolist() + second.full[8 * page : 12 * page].tolist())


def test_a_released_allocation_gives_back_every_page() -> None:
    cache = make(4, "full+mamba")
    held = cache.allocate(10, state=True)
    assert held is not None
    cache.release(held)
    stats = cache.stats()
    assert stats.available == 512
    assert stats.components["mamba"].pool_available == 64


def test_lending_a_path_that_lacks_a_value_raises_the_precise_error() -> None:
    """The one-concatenation lend falls back to ``path_values``, which names the node."""
    cache = make(1)
    cache_prompt(cache, tokens(8))
    side = cache.sides[0]
    found = cache.tree.match(np.arange(1, 9, dtype="<u4").tobytes(), cache.namespace_of(None),
                             touch=False)
    holed = Node(0, found.path[0].parent, b"", 0, 8, 1, None)  # a node without a value
    buffer = side.new_buffer()
    broken = TreeMatch(8, holed, [holed], 8)
    with pytest.raises(InvalidSlotsError, match="no value on node"):
        side.lend(buffer, cache.tree, broken, None, np.zeros(0, dtype=np.int64), 8)
    side.lend(buffer, cache.tree, found, None, np.arange(3, dtype=np.int64), 11)
    assert buffer.slots[:11].tolist() == [*found.path[0].values[0].tolist(), 0, 1, 2]
    assert len(buffer.slots) == 11 + 16  # room for decode tokens
