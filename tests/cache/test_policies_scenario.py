"""One workload, every eviction policy: the exact eviction order each policy documents.

Orders are observed through BlockRemoved events (each prompt's pages are recognised by the
hashes its BlockStored announced), evicting one node at a time. Logical ticks: an insert
(``finish``) advances the clock once, so is a match; ``admit`` with nothing cached does not.
Every mutating call is followed by ``check_invariants()``.
"""

from __future__ import annotations

from typing import Any

import pytest

from radixkv import BlockRemoved, BlockStored

from ..audited import AuditedCache

A = [101, 102, 103, 104]
B = [201, 202, 203, 204]
C = [301, 302, 303, 304]


class Workload:
    """A cache with events on that remembers which prompt each stored page hash belongs to."""

    def __init__(self, policy: str, **config: Any) -> None:
        self.cache = AuditedCache(capacity=64, policy=policy, events=True, **config)
        self.labels: dict[int, str] = {}

    def insert(self, label: str, tokens: list[int], **kw: Any) -> None:
        lease = self.cache.admit(tokens, **kw)
        self.cache.finish(lease)
        for event in self.cache.take_events():
            assert isinstance(event, BlockStored)
            for block in event.block_hashes:
                self.labels[block] = label

    def match(self, tokens: list[int], times: int = 1) -> None:
        for _ in range(times):
            assert self.cache.match(tokens).length == len(tokens)

    def eviction_order(self) -> list[str]:
        """Evict one node at a time until nothing is left; the labels in eviction order."""
        order: list[str] = []
        while self.cache.evict(1)["full"]:
            events = self.cache.take_events()
            assert len(events) == 1
            event = events[0]
            assert isinstance(event, BlockRemoved)
            names = {self.labels[block] for block in event.block_hashes}
            assert len(names) == 1
            order.append(names.pop())
        assert self.cache.stats().components["full"].cached == 0
        assert self.cache.stats().nodes == 0
        return order


def common(policy: str) -> Workload:
    """Insert A, B, C (sharing nothing; ticks 1, 2, 3); match A twice (ticks 4, 5) and B
    once (tick 6). Then A: 2 hits, last 5; B: 1 hit, last 6; C: 0 hits, last 3."""
    work = Workload(policy)
    work.insert("A", A)
    work.insert("B", B)
    work.insert("C", C)
    work.match(A, times=2)
    work.match(B)
    return work


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("lru", ["C", "A", "B"]),  # by last access 3, 5, 6
        ("lfu", ["C", "B", "A"]),  # by hits 0, 1, 2
        ("mru", ["B", "A", "C"]),  # most recent first
        ("fifo", ["A", "B", "C"]),  # by creation, accesses ignored
        ("filo", ["C", "B", "A"]),  # newest creation first
        ("slru", ["C", "B", "A"]),  # probationary C, B by recency; then protected A
        ("priority", ["C", "A", "B"]),  # equal priorities: by recency
        ("tlru", ["C", "A", "B"]),  # equal ttl: expiry follows recency
    ],
)
def test_the_common_workload_evicts_in_each_policys_documented_order(
    policy: str, expected: list[str]
) -> None:
    assert common(policy).eviction_order() == expected


def test_lru_and_lfu_give_different_orders_for_the_same_workload() -> None:
    assert common("lru").eviction_order() == ["C", "A", "B"]
    assert common("lfu").eviction_order() == ["C", "B", "A"]


def test_fifo_and_filo_ignore_accesses_and_are_reverses() -> None:
    fifo, filo = common("fifo").eviction_order(), common("filo").eviction_order()
    assert fifo == ["A", "B", "C"]
    assert filo == list(reversed(fifo))


def hit_ladder(policy: str) -> Workload:
    """A gets 3 hits (ticks 4-6), B 2 hits (7, 8), C 1 hit (9)."""
    work = Workload(policy)
    work.insert("A", A)
    work.insert("B", B)
    work.insert("C", C)
    work.match(A, times=3)
    work.match(B, times=2)
    work.match(C)
    return work


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("lru", ["A", "B", "C"]),
        ("mru", ["C", "B", "A"]),
        ("lfu", ["C", "B", "A"]),
        # C is probationary (1 hit); A and B are both protected (>= 2) and go by recency
        ("slru", ["C", "A", "B"]),
    ],
)
def test_slru_protects_after_two_hits_but_does_not_rank_by_hit_count(
    policy: str, expected: list[str]
) -> None:
    assert hit_ladder(policy).eviction_order() == expected


def test_priority_evicts_the_lowest_request_priority_first_regardless_of_recency() -> None:
    def run(policy: str) -> list[str]:
        work = Workload(policy)
        work.insert("A", A, priority=5)
        work.insert("B", B, priority=1)
        work.insert("C", C, priority=3)
        work.match(B, times=2)  # B: most recent and most hit
        return work.eviction_order()

    assert run("priority") == ["B", "C", "A"]
    assert run("lru") == ["A", "C", "B"]


def test_priority_of_a_node_is_the_highest_of_the_requests_that_inserted_through_it() -> None:
    work = Workload("priority")
    low = work.cache.admit(A, priority=0)
    high = work.cache.admit(A, priority=7)  # nothing cached yet: both insert A
    work.insert("B", B, priority=1)
    for lease in (high, low):  # the later, lower priority must not lower it
        work.cache.finish(lease)
    for event in work.cache.take_events():
        assert isinstance(event, BlockStored)
        for block in event.block_hashes:
            work.labels[block] = "A"
    work.insert("C", C, priority=3)
    assert work.eviction_order() == ["B", "C", "A"]


def test_priority_ties_go_to_the_least_recently_used() -> None:
    work = Workload("priority")
    work.insert("A", A, priority=2)
    work.insert("B", B, priority=2)
    work.insert("C", C, priority=0)
    work.match(A)
    assert work.eviction_order() == ["C", "B", "A"]


def test_tlru_lets_a_long_ttl_entry_outlive_more_recent_short_lived_ones() -> None:
    def run(policy: str) -> list[str]:
        work = Workload(policy)
        work.insert("A", A, ttl=100)  # a system prompt: expiry 1 + 100
        work.insert("B", B, ttl=10)  # expiry 2 + 10
        work.insert("C", C, ttl=50)  # expiry 3 + 50
        work.match(B)  # tick 4: B expires at 14
        work.match(C)  # tick 5: C expires at 55
        return work.eviction_order()

    assert run("tlru") == ["B", "C", "A"]
    assert run("lru") == ["A", "B", "C"]


def test_tlru_uses_the_default_ttl_for_requests_that_give_none() -> None:
    work = Workload("tlru", default_ttl=5)
    work.insert("A", A, ttl=20)  # expiry 21
    work.insert("B", B)  # expiry 2 + 5
    work.insert("C", C, ttl=0)  # expiry 3
    work.match(B)  # tick 4: B expires at 9
    assert work.eviction_order() == ["C", "B", "A"]


def test_tlru_ttl_belongs_to_the_creating_request() -> None:
    work = Workload("tlru")
    work.insert("A", A, ttl=1)  # expiry 2
    work.insert("B", B, ttl=50)  # expiry 52
    lease = work.cache.admit(A, ttl=1000)  # tick 3: A's own ttl still applies -> expiry 4
    work.cache.finish(lease)
    assert work.eviction_order() == ["A", "B"]


def test_eviction_order_follows_the_policy_within_a_shared_tree() -> None:
    """Leaves go first whatever the policy; the parent follows its last child."""

    def run(policy: str) -> list[str]:
        work = Workload(policy)
        work.insert("S+x", [1, 2, 3, 4])
        work.insert("S+y", [1, 2, 5, 6])  # splits: S=[1,2], leaves [3,4] and [5,6]
        # the split re-labels nothing: S's hash was announced with "S+x"
        work.insert("Z", [9, 9, 9, 9])
        work.match([1, 2, 3, 4])
        return work.eviction_order()

    # ticks: x 1, split+y 2, Z 3, match x (and S) 4
    assert run("lru") == ["S+y", "Z", "S+x", "S+x"]
    assert run("mru") == ["S+x", "Z", "S+y", "S+x"]
    # the lower half [3,4] keeps the creation tick of the node it was split from (1), so it
    # goes first; S (also created at 1) becomes a candidate when its last child goes
    assert run("fifo") == ["S+x", "S+y", "S+x", "Z"]


def test_admit_is_an_access_and_a_hit_of_the_prefix_it_borrows() -> None:
    def run(policy: str) -> list[str]:
        work = Workload(policy)
        work.insert("A", A)  # tick 1
        work.insert("B", B)  # tick 2
        work.match(B)  # tick 3: B has 1 hit
        lease = work.cache.admit([*A, 999])  # tick 4: A accessed and hit
        work.cache.abort(lease)
        lease = work.cache.admit([*A, 998])  # tick 5: A has 2 hits
        work.cache.abort(lease)
        return work.eviction_order()

    assert run("lru") == ["B", "A"]
    assert run("lfu") == ["B", "A"]
    assert run("fifo") == ["A", "B"]


def test_an_insert_through_a_node_refreshes_its_expiry_and_recency() -> None:
    def run(policy: str) -> list[str]:
        work = Workload(policy)
        first = work.cache.admit(A, ttl=10)
        second = work.cache.admit(A)  # admitted before A is cached: will insert through it
        work.cache.finish(first)  # tick 1: A expires at 11
        for event in work.cache.take_events():
            assert isinstance(event, BlockStored)
            for block in event.block_hashes:
                work.labels[block] = "A"
        work.insert("B", B, ttl=12)  # tick 2: expires at 14
        work.insert("C", C, ttl=20)  # tick 3: expires at 23
        work.match(C, times=2)  # ticks 4, 5: C expires at 25
        work.cache.finish(second)  # tick 6: an access of A with A's own ttl: expires at 16
        return work.eviction_order()

    assert run("tlru") == ["B", "A", "C"]
    assert run("lru") == ["B", "C", "A"]
