"""The tier axis: a node's value is addressed as (component, tier), and a component's rules
run unchanged on another tier through a view bound to that tier's value slot."""

from __future__ import annotations

import numpy as np

from radixkv import CacheConfig, PrefixCache
from radixkv.core.node import Node
from radixkv.core.state import _bound
from radixkv.core.tiers import DEVICE, HOST, TIER_NAMES, Tier


def cached(components: tuple[str, ...] = ("full",), **config: object) -> PrefixCache:
    cache = PrefixCache(CacheConfig(capacity=64, page_size=4, components=components, **config))
    cache.finish(cache.admit(list(range(1, 13))))
    return cache


def test_the_device_tier_slots_are_the_component_indices() -> None:
    assert TIER_NAMES[DEVICE] == "device"
    device, host = Tier(DEVICE, 3, "GPU"), Tier(HOST, 3, "CPU")
    assert [device.slot(c) for c in range(3)] == [0, 1, 2]
    assert [host.slot(c) for c in range(3)] == [3, 4, 5]  # a second tier's follow the first's
    assert (device.name, host.name, host.medium) == ("device", "host", "CPU")


def test_a_tier_reads_only_its_own_slots_of_a_node() -> None:
    device, host = Tier(DEVICE, 2, "GPU"), Tier(HOST, 2, "CPU")
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
    host_slot = Tier(HOST, len(tree.components), "CPU").slot(0)
    host_view = _bound(tree.components[0], host_slot)
    node.values = [*node.values, None]  # as a node with a (missing) second-tier value
    assert host_view.usable_length([node], 12) == 0  # nothing on that tier
    assert tree.components[0].usable_length([node], 12) == 12  # the device view is unchanged
    node.values = [node.values[0], np.arange(100, 112)]
    assert host_view.usable_length([node], 12) == 12
    assert host_view.is_candidate(node)
    node.values = node.values[:1]
    cache.check_invariants()
