"""What the host tier tells, and whom: the listener and the sink it was built with (issue
32: parts handed in at construction), and the values host eviction tells before they go."""

from __future__ import annotations

import numpy as np

from radixkv.cache.copy_acks import CopyAcks
from radixkv.core.node import Node
from radixkv.core.tiers import HOST
from radixkv.host import HostTier

from ..components.support import seq
from .helpers import demoted


def test_host_eviction_tells_dropping_of_each_value_while_its_node_is_linked() -> None:
    cache = demoted(0, prompts=(seq(0, 4), seq(10, 4)))
    tree = cache.tree
    told: list[tuple[int, int, list[int], bool]] = []

    def dropping(node: Node, index: int, slots: np.ndarray) -> None:
        linked = tree.nodes.get(node.id) is node and node.parent is not None \
            and node in node.parent.children.values()
        told.append((node.id, index, slots.tolist(), linked))

    held = {node.id: node.values[1].tolist() for node in tree.nodes.values()
            if node.parent is not None}
    result = tree.evict([8], tier=HOST, dropping=dropping)
    cache.host.free_host(result.freed)
    cache.check_invariants()
    assert result.evicted == [8] and cache.stats().nodes == 0
    assert sorted(told) == sorted((node, 0, slots, True) for node, slots in held.items())


def test_host_eviction_without_dropping_tells_nobody_and_frees_the_same() -> None:
    cache = demoted(0, prompts=(seq(0, 4), seq(10, 4)))
    assert cache.host.evict_host([8]) == [8]  # a cache without storage: no sink
    cache.check_invariants()
    assert cache.host.pools[0].available == 32


def test_a_host_tier_is_built_with_the_cache_as_listener_and_no_sink_without_storage() -> None:
    cache = demoted(0)
    host = cache.host
    assert isinstance(host.listener, CopyAcks)
    assert host.sink is None
    assert host.write_back is False and cache.reclaimer is host
    assert HostTier(capacity=8, write_policy="write_back").policy.backup_uses is None
