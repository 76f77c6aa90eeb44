"""A third tier is one Tier plus one controller: a tree of three tiers, driven by the
test-only controller of :mod:`third_tier`, demotes values from the host to the third tier,
drops them from the device and the host, and loads them back onto the device from
whichever tier holds them, every row exact; the audit holds after every step."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv.core.keys import encode_tokens
from radixkv.core.tiers import DEVICE, HOST, TIER_NAMES
from radixkv.errors import InvariantError

from .third_tier import DISK, ThreeTiers, oracle_row

SHARED = [7, 3, 9, 1, 4, 4, 2, 8]
FIRST = [*SHARED, 5, 6, 5, 6]
SECOND = [*SHARED, 11, 12, 13]


def expected(namespace: str, tokens: list[int], length: int) -> np.ndarray:
    return np.stack([oracle_row(namespace, tokens[: i + 1]) for i in range(length)])


def demoted(reverse: bool = False, page_size: int = 1) -> ThreeTiers:
    """FIRST and SECOND computed, backed up to the host, demoted to the third tier, then
    dropped from the device and the host: held on the third tier alone."""
    tiers = ThreeTiers(64, page_size, reverse)
    for tokens in (FIRST, SECOND):
        tiers.insert("ns", tokens)
        tiers.check()
        tiers.copy_down("ns", tokens, DEVICE, HOST)
        tiers.check()
        tiers.copy_down("ns", tokens, HOST, DISK)
        tiers.check()
    cached = 12 if page_size == 4 else 15  # SECOND's whole pages end with SHARED at 4
    assert [t.cached for t in tiers.tree.tiers] == [[cached]] * 3
    assert tiers.evict(DEVICE, 64) == cached and tiers.evict(HOST, 64) == cached
    tiers.check()
    return tiers


def test_a_tree_of_three_tiers_has_a_third_tier_with_its_own_slots_and_medium() -> None:
    tree = ThreeTiers(8).tree
    assert [t.name for t in tree.tiers] == list(TIER_NAMES) == ["device", "host", "disk"]
    assert [t.slots for t in tree.tiers] == [(0,), (1,), (2,)]
    assert [t.medium for t in tree.tiers] == ["GPU", "CPU", "DISK"]


def test_values_demoted_to_the_third_tier_keep_their_nodes_and_nothing_matches_on_device(
) -> None:
    tiers = demoted()
    tree = tiers.tree
    assert tree.match(encode_tokens(FIRST), "ns").length == 0
    assert tree.copies.match_all_tiers(encode_tokens(FIRST), "ns").length == len(FIRST)
    assert [t.cached for t in tree.tiers] == [[0], [0], [15]]
    assert tree.tiers[HOST].evicted[0]["budget"] == 15


@pytest.mark.parametrize("page_size", [1, 4])
def test_a_load_back_from_the_third_tier_serves_exactly_the_rows_computed(
        page_size: int) -> None:
    tiers = demoted(page_size=page_size)
    for tokens in (FIRST, SECOND):
        match = tiers.load_back("ns", tokens)
        tiers.check()
        length = len(tokens) - len(tokens) % page_size
        assert match.length == length
        assert np.array_equal(tiers.device_rows(match), expected("ns", tokens, length))


def test_a_load_back_takes_each_value_from_the_highest_tier_holding_it() -> None:
    tiers = ThreeTiers(64)
    tiers.insert("ns", FIRST)
    tiers.copy_down("ns", FIRST, DEVICE, HOST)
    tiers.copy_down("ns", FIRST, HOST, DISK)
    tiers.insert("ns", SECOND)  # its tail is on device only
    tiers.copy_down("ns", SECOND, DEVICE, HOST)  # now on the host too (not on the disk)
    tiers.evict(DEVICE, 64)
    tiers.check()
    tree = tiers.tree
    node = tree.copies.match_all_tiers(encode_tokens(SECOND), "ns").node
    assert node is not None
    from_host = tree.copies.load_plan(node, len(SECOND), HOST)
    assert from_host and tree.copies.load_plan(node, len(SECOND), DISK) == []  # all on the host
    tiers.evict(HOST, 64)  # FIRST's nodes survive on the disk; SECOND's tail goes
    tiers.check()
    match = tiers.load_back("ns", SECOND)
    assert match.length == len(SHARED)
    assert np.array_equal(tiers.device_rows(match), expected("ns", SECOND, len(SHARED)))


def test_a_tree_of_three_tiers_refuses_eviction_of_a_fourth_and_changes_nothing() -> None:
    tiers = demoted()
    with pytest.raises(Exception, match=r"tiers 0\.\.2"):
        tiers.tree.evict([1], tier=3)
    tiers.check()


def test_negative_control_reversed_rows_on_load_back_are_caught() -> None:
    tiers = demoted(reverse=True)
    match = tiers.load_back("ns", FIRST)
    assert match.length == len(FIRST)
    assert not np.array_equal(tiers.device_rows(match), expected("ns", FIRST, len(FIRST)))


def test_negative_control_a_third_tier_value_under_a_parent_without_one_breaks_the_audit(
) -> None:
    tiers = ThreeTiers(64)
    tiers.insert("ns", FIRST)
    tiers.insert("ns", SECOND)  # FIRST's tail is a leaf below the shared node
    tiers.check()
    tree = tiers.tree
    leaf = tree.match(encode_tokens(FIRST), "ns").node
    assert leaf is not None and leaf.start == len(SHARED)
    # a disk value on the leaf alone, bypassing backup_plan's closure rule
    tree.copies.place(leaf, 0, DISK, tiers.take(DISK, leaf.length))
    with pytest.raises(InvariantError, match="disk tier"):
        tiers.check()
