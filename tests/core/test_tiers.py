"""The tier axis: a node's value is addressed as (component, tier), and a component's rules
run unchanged on another tier through a view bound to that tier's value slot."""

from __future__ import annotations

import numpy as np

from radixkv import CacheConfig, HostTier, PrefixCache
from radixkv.core.node import Node
from radixkv.core.tiers import DEVICE, TIER_NAMES, Tier, bound


def cached(components: tuple[str, ...] = ("full",), **config: object) -> PrefixCache:
    cache = PrefixCache(CacheConfig(capacity=64, page_size=4, components=components, **config))
    cache.finish(cache.admit(list(range(1, 13))))
    return cache


def two_tiers() -> tuple[Tier, Tier]:
    """The device and host tiers of a FULL + SWA tree."""
    cache = PrefixCache(CacheConfig(capacity=64, page_size=4, components=("full", "swa"),
                                    sliding_window=4, host=HostTier(capacity=64)))
    device, host = cache.tree.tiers
    return device, host


def test_the_device_tier_slots_are_the_component_indices() -> None:
    assert TIER_NAMES[DEVICE] == "device"
    device, host = two_tiers()
    assert [device.slot(c) for c in range(2)] == [0, 1]
    assert [host.slot(c) for c in range(2)] == [2, 3]  # a second tier's follow the first's
    assert (device.name, host.name, host.medium) == ("device", "host", "CPU")


def test_each_tier_binds_views_of_the_components_to_its_own_slots() -> None:
    device, host = two_tiers()
    assert [view.index for view in device.views] == [0, 1]
    assert [view.index for view in host.views] == [2, 3]
    assert [type(view) for view in host.views] == [type(view) for view in device.views]
    assert all(a is not b for a, b in zip(device.queues, host.queues))


def test_a_tier_reads_only_its_own_slots_of_a_node() -> None:
    device, host = two_tiers()
    node = Node(1, None, b"", 0, 4, 2, None, 2)
    slots = np.arange(4)
    node.values[host.slot(1)] = slots
    assert host.holds_any(node) and not device.holds_any(node)
    assert host.value(node, 1) is slots and host.value(node, 0) is None
    assert device.value(node, 1) is None
    node.values[device.slot(0)] = slots
    assert device.holds_any(node) and device.value(node, 0) is slots


def test_value_and_has_read_a_component_on_a_tier() -> None:
    cache = cached(("full", "swa"), sliding_window=4)
    tree = cache.tree
    (node,) = (n for n in tree.nodes.values() if n.parent is not None)
    full = tree.value(node, 0, DEVICE)
    assert full is not None and full.tolist() == list(range(12))
    assert tree.has(node, 1) and tree.view(1) is tree.components[1]
    cache.evict(swa=4)  # the leaf goes whole
    assert cache.stats().nodes == 0


def test_a_components_rules_run_unchanged_on_another_tiers_slot() -> None:
    cache = cached()
    tree = cache.tree
    (node,) = (n for n in tree.nodes.values() if n.parent is not None)
    host_view = bound(tree.components[0], 1)  # the slot a second tier's FULL value takes
    node.values = [*node.values, None]  # as a node with a (missing) second-tier value
    assert host_view.usable_length([node], 12) == 0  # nothing on that tier
    assert tree.components[0].usable_length([node], 12) == 12  # the device view is unchanged
    node.values = [node.values[0], np.arange(100, 112)]
    assert host_view.usable_length([node], 12) == 12
    assert host_view.is_candidate(node)
    node.values = node.values[:1]
    cache.check_invariants()
