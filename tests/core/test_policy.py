"""Eviction policies' key orders on hand-built nodes, make_policy, and EvictionQueue."""

from __future__ import annotations

import pytest

from radixkv.core.node import Node
from radixkv.core.policy import POLICIES, EvictionQueue, make_policy
from radixkv.errors import ConfigError

ALL_POLICIES = ("lru", "mru", "fifo", "filo", "lfu", "priority", "slru", "tlru")


def make_node(
    node_id: int,
    *,
    last_access: int = 0,
    created: int = 0,
    hits: int = 0,
    priority: int = 0,
    expiry: int = 0,
) -> Node:
    node = Node(node_id, None, b"", 0, 0, 1, (None, None))
    node.last_access = last_access
    node.created = created
    node.hits = hits
    node.priority = priority
    node.ttl = expiry - last_access  # tlru keys on last_access + ttl
    return node


def order(policy_name: str, nodes: list[Node]) -> list[int]:
    """Node ids in the order the policy evicts them (smallest key first)."""
    policy = make_policy(policy_name)
    return [node.id for node in sorted(nodes, key=policy.key)]


# ---------------------------------------------------------------------- registry


def test_every_documented_policy_is_registered() -> None:
    assert set(POLICIES) == set(ALL_POLICIES)


@pytest.mark.parametrize("name", ALL_POLICIES)
def test_make_policy_returns_the_named_policy(name: str) -> None:
    policy = make_policy(name)
    assert policy.name == name


@pytest.mark.parametrize("name", ["LRU", "arc", "", "lru "])
def test_unknown_policy_name_lists_every_valid_name(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_policy(name)
    message = str(info.value)
    assert repr(name) in message
    for valid in ALL_POLICIES:
        assert valid in message


@pytest.mark.parametrize("name", [None, 3, ["lru"]])
def test_a_non_string_policy_name_is_a_config_error(name: object) -> None:
    with pytest.raises(ConfigError, match="valid policies"):
        make_policy(name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ALL_POLICIES)
def test_every_key_ends_with_the_node_id(name: str) -> None:
    node = make_node(17, last_access=3, created=2, hits=4, priority=1, expiry=9)
    assert make_policy(name).key(node)[-1] == 17


# ---------------------------------------------------------------------- key orders


def test_lru_evicts_the_least_recently_used_first() -> None:
    nodes = [make_node(1, last_access=5), make_node(2, last_access=1), make_node(3, last_access=9)]
    assert order("lru", nodes) == [2, 1, 3]


def test_lru_breaks_ties_with_the_older_node() -> None:
    nodes = [make_node(8, last_access=4), make_node(3, last_access=4), make_node(5, last_access=4)]
    assert order("lru", nodes) == [3, 5, 8]


def test_lru_ignores_hits_creation_and_priority() -> None:
    nodes = [
        make_node(1, last_access=2, hits=100, priority=9, created=0),
        make_node(2, last_access=3, hits=0, priority=0, created=0),
    ]
    assert order("lru", nodes) == [1, 2]


def test_mru_evicts_the_most_recently_used_first() -> None:
    nodes = [make_node(1, last_access=5), make_node(2, last_access=1), make_node(3, last_access=9)]
    assert order("mru", nodes) == [3, 1, 2]


def test_mru_breaks_ties_with_the_newer_node() -> None:
    nodes = [make_node(3, last_access=4), make_node(8, last_access=4), make_node(5, last_access=4)]
    assert order("mru", nodes) == [8, 5, 3]


def test_fifo_evicts_the_first_created_regardless_of_access() -> None:
    nodes = [
        make_node(1, created=3, last_access=3),
        make_node(2, created=1, last_access=50, hits=7),
        make_node(3, created=2, last_access=2),
    ]
    assert order("fifo", nodes) == [2, 3, 1]


def test_fifo_breaks_ties_with_the_older_node() -> None:
    nodes = [make_node(6, created=1), make_node(4, created=1)]
    assert order("fifo", nodes) == [4, 6]


def test_filo_evicts_the_last_created_regardless_of_access() -> None:
    nodes = [
        make_node(1, created=3, last_access=3),
        make_node(2, created=1, last_access=50, hits=7),
        make_node(3, created=2, last_access=2),
    ]
    assert order("filo", nodes) == [1, 3, 2]


def test_filo_breaks_ties_with_the_newer_node() -> None:
    nodes = [make_node(4, created=1), make_node(6, created=1)]
    assert order("filo", nodes) == [6, 4]


def test_lfu_evicts_the_fewest_hits_first() -> None:
    nodes = [
        make_node(1, hits=3, last_access=1),
        make_node(2, hits=1, last_access=9),
        make_node(3, hits=2, last_access=5),
    ]
    assert order("lfu", nodes) == [2, 3, 1]


def test_lfu_breaks_hit_ties_by_recency_then_id() -> None:
    nodes = [
        make_node(1, hits=2, last_access=8),
        make_node(2, hits=2, last_access=4),
        make_node(5, hits=2, last_access=4),
        make_node(4, hits=2, last_access=4),
    ]
    assert order("lfu", nodes) == [2, 4, 5, 1]


def test_priority_evicts_the_lowest_priority_first() -> None:
    nodes = [
        make_node(1, priority=5, last_access=1),
        make_node(2, priority=-1, last_access=9),
        make_node(3, priority=0, last_access=5),
    ]
    assert order("priority", nodes) == [2, 3, 1]


def test_priority_breaks_ties_by_recency_then_id() -> None:
    nodes = [
        make_node(1, priority=1, last_access=7),
        make_node(3, priority=1, last_access=2),
        make_node(2, priority=1, last_access=2),
    ]
    assert order("priority", nodes) == [2, 3, 1]


def test_slru_evicts_probationary_before_protected_each_by_recency() -> None:
    nodes = [
        make_node(1, hits=2, last_access=1),  # protected, oldest
        make_node(2, hits=0, last_access=9),  # probationary, newest
        make_node(3, hits=1, last_access=5),  # probationary
        make_node(4, hits=7, last_access=3),  # protected
    ]
    assert order("slru", nodes) == [3, 2, 1, 4]


def test_slru_does_not_rank_protected_nodes_by_hit_count() -> None:
    nodes = [make_node(1, hits=9, last_access=1), make_node(2, hits=2, last_access=2)]
    assert order("slru", nodes) == [1, 2]
    assert order("lfu", nodes) == [2, 1]


def test_slru_protects_from_exactly_two_hits() -> None:
    policy = make_policy("slru")
    assert policy.key(make_node(1, hits=1))[0] == 0
    assert policy.key(make_node(1, hits=2))[0] == 1


def test_tlru_evicts_the_earliest_expiry_first() -> None:
    nodes = [
        make_node(1, expiry=100, last_access=1),
        make_node(2, expiry=12, last_access=9),
        make_node(3, expiry=50, last_access=5),
    ]
    assert order("tlru", nodes) == [2, 3, 1]


def test_tlru_breaks_ties_with_the_older_node() -> None:
    nodes = [make_node(9, expiry=5), make_node(2, expiry=5)]
    assert order("tlru", nodes) == [2, 9]


def test_the_same_nodes_give_different_orders_under_different_policies() -> None:
    nodes = [
        make_node(1, created=1, last_access=6, hits=3, priority=2, expiry=20),
        make_node(2, created=2, last_access=8, hits=2, priority=0, expiry=10),
        make_node(3, created=3, last_access=9, hits=1, priority=1, expiry=30),
    ]
    assert order("lru", nodes) == [1, 2, 3]
    assert order("mru", nodes) == [3, 2, 1]
    assert order("fifo", nodes) == [1, 2, 3]
    assert order("filo", nodes) == [3, 2, 1]
    assert order("lfu", nodes) == [3, 2, 1]
    assert order("priority", nodes) == [2, 3, 1]
    assert order("slru", nodes) == [3, 1, 2]
    assert order("tlru", nodes) == [2, 1, 3]


# ---------------------------------------------------------------------- EvictionQueue


def drain(queue: EvictionQueue) -> list[int]:
    out = []
    while (node := queue.pop()) is not None:
        out.append(node.id)
    return out


def lru_queue(*nodes: Node) -> EvictionQueue:
    queue = EvictionQueue(make_policy("lru"))
    for node in nodes:
        queue.add(node)
    return queue


def test_pop_returns_candidates_in_policy_order_then_none() -> None:
    a, b, c = make_node(1, last_access=3), make_node(2, last_access=1), make_node(3, last_access=2)
    queue = lru_queue(a, b, c)
    assert len(queue) == 3
    assert [n.id for n in queue.ordered()] == [2, 3, 1]
    assert drain(queue) == [2, 3, 1]
    assert len(queue) == 0
    assert queue.pop() is None


def test_pop_on_an_empty_queue_is_none() -> None:
    assert EvictionQueue(make_policy("lfu")).pop() is None


def test_membership_follows_add_and_discard() -> None:
    a, b = make_node(1), make_node(2)
    queue = lru_queue(a)
    assert a in queue
    assert b not in queue
    queue.discard(a)
    assert a not in queue
    assert len(queue) == 0


def test_touch_rekeys_a_member_and_the_stale_entry_is_skipped() -> None:
    a, b, c = make_node(1, last_access=1), make_node(2, last_access=2), make_node(3, last_access=3)
    queue = lru_queue(a, b, c)
    a.last_access = 10
    queue.touch(a)
    assert len(queue) == 3
    assert drain(queue) == [2, 3, 1]


def test_touch_of_a_non_member_does_not_add_it() -> None:
    a, b = make_node(1, last_access=1), make_node(2, last_access=2)
    queue = lru_queue(a)
    queue.touch(b)
    assert b not in queue
    assert drain(queue) == [1]


def test_adding_a_member_again_rekeys_it_instead_of_duplicating() -> None:
    a, b = make_node(1, last_access=1), make_node(2, last_access=2)
    queue = lru_queue(a, b)
    a.last_access = 5
    queue.add(a)
    assert len(queue) == 2
    assert drain(queue) == [2, 1]


def test_a_discarded_node_is_never_popped() -> None:
    a, b, c = make_node(1, last_access=1), make_node(2, last_access=2), make_node(3, last_access=3)
    queue = lru_queue(a, b, c)
    queue.discard(a)
    queue.discard(c)
    queue.discard(c)  # discarding twice is harmless
    assert drain(queue) == [2]


def test_a_node_re_added_after_discard_pops_once_with_its_new_key() -> None:
    a, b = make_node(1, last_access=1), make_node(2, last_access=5)
    queue = lru_queue(a, b)
    queue.discard(a)
    a.last_access = 9
    queue.add(a)
    assert drain(queue) == [2, 1]


def test_a_node_re_added_after_discard_with_an_equal_key_pops_once() -> None:
    a, b = make_node(1, last_access=1), make_node(2, last_access=5)
    queue = lru_queue(a, b)
    queue.discard(a)
    queue.add(a)  # same key value as the stale entry still in the heap
    assert drain(queue) == [1, 2]


def test_touch_with_an_unchanged_key_pops_the_node_once() -> None:
    a, b = make_node(1, last_access=1), make_node(2, last_access=5)
    queue = lru_queue(a, b)
    for _ in range(5):
        queue.touch(a)
    assert drain(queue) == [1, 2]


def test_entries_report_the_current_key_of_each_member() -> None:
    policy = make_policy("lfu")
    queue = EvictionQueue(policy)
    a = make_node(1, hits=1, last_access=2)
    queue.add(a)
    a.hits = 4
    queue.touch(a)
    entries = queue.entries()
    assert set(entries) == {1}
    assert entries[1][0] == policy.key(a) == (4, 2, 1)
    assert entries[1][1] is a


def test_clear_empties_the_queue() -> None:
    queue = lru_queue(make_node(1), make_node(2))
    queue.clear()
    assert len(queue) == 0
    assert queue.pop() is None


def test_compaction_bounds_the_heap_and_keeps_the_order() -> None:
    nodes = [make_node(i, last_access=i) for i in range(1, 11)]
    queue = lru_queue(*nodes)
    # Many re-keys leave many stale entries; compaction must drop them without losing order.
    for round_ in range(1, 40):
        for node in nodes:
            node.last_access = 1000 * round_ + (node.id * 7) % 11
            queue.touch(node)
        assert len(queue._heap) <= 2 * len(queue) + 65
    queue.discard(nodes[0])
    expected = [n.id for n in sorted(nodes[1:], key=lambda n: (n.last_access, n.id))]
    assert [n.id for n in queue.ordered()] == expected
    assert drain(queue) == expected


def test_compaction_forgets_discarded_nodes() -> None:
    nodes = [make_node(i, last_access=i) for i in range(1, 201)]
    queue = lru_queue(*nodes)
    for node in nodes[:150]:
        queue.discard(node)
    # enough adds to trigger compaction while only 50 are members
    for node in nodes[150:]:
        for _ in range(3):
            queue.touch(node)
    assert len(queue._heap) <= 2 * len(queue) + 65
    assert drain(queue) == list(range(151, 201))
