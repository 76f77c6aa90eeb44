"""The fast-path flags of a component must agree with the hooks they let the tree skip.

The tree trusts ``pins_whole_path``, ``pins_end_node``, ``pins_window``, ``per_token``,
``whole_when_complete``, ``leaf_candidates`` and ``adopts_past_borrowed`` instead of calling
``lock_boundary`` / ``value_size`` / ``usable_length`` / ``is_candidate`` / ``adopt_path`` on
its hot paths. :func:`check_flags` compares each flag with its hook on every node of a tree;
:func:`flags_test` does so on random trees.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ..cache import PrefixCache
from ..components import Component
from ..core.node import Node
from ..errors import OutOfSlotsError
from .machine import VOCAB, Plan


def check_flags(cache: PrefixCache) -> None:
    """Raise :class:`AssertionError` where a component's flag disagrees with its hook on a
    node of ``cache``'s tree (for every lock end inside each node); pure."""
    tree = cache.tree
    nodes = [node for node in tree.nodes.values() if node.parent is not None]
    for component in tree.components:
        assert component.request_side().per_token == component.per_token, component.name
        complete = tree.holes[component.index] == 0
        for node in nodes:
            _check_node(component, node, complete)
            if component.adopts_past_borrowed:
                _check_adoption(component, _path(node))


def _check_node(component: Component, node: Node, complete: bool) -> None:
    name, index = component.name, component.index
    path = _path(node)
    whole = all(n.values[index] is not None for n in path)
    for end in range(node.start + 1, node.end + 1):
        boundary = component.lock_boundary(node, end)
        assert boundary <= node.start, (name, node.id, end, "a lock pins its own node")
        if component.pins_whole_path:
            assert boundary == 0, (name, node.id, end, "pins_whole_path")
        if component.pins_end_node:
            assert boundary == node.start, (name, node.id, end, "pins_end_node")
        if component.pins_window:
            assert boundary == _window_node(node, component.window_start(end)).start, \
                (name, node.id, end, "pins_window")
        if component.whole_when_complete and whole:
            assert component.usable_length(path, end) == end, \
                (name, node.id, end, "whole_when_complete")
    if component.per_token:
        assert component.value_size(node) == node.length, (name, node.id, "per_token")
    if component.leaf_candidates and complete and component.is_candidate(node):
        assert not node.children, (name, node.id, "leaf_candidates")


ADOPT_BASE = 1 << 20
"""The first slot id of the made-up slots an adoption check offers (position p: base + p),
so that a duplicate handed back names the position it came from."""


def _check_adoption(component: Component, path: list[Node]) -> None:
    """``adopts_past_borrowed``: with ``borrowed`` at any node boundary of ``path``, the
    component's ``adopt_path`` takes no value for, and returns no duplicate from, a node
    ending at or before it (the tree leaves those nodes out of the path it passes)."""
    end = path[-1].end
    slots = np.arange(ADOPT_BASE, ADOPT_BASE + end, dtype=np.int64)
    data = component.request_side().direct_input(slots, end)
    for borrowed in [0, *(node.end for node in path)]:
        adopted, duplicates = component.adopt_path(path, data, borrowed)
        early = [node.id for node, _ in adopted if node.end <= borrowed]
        assert not early, (component.name, early, borrowed, "adopts_past_borrowed (adopted)")
        positions = np.asarray(duplicates, dtype=np.int64) - ADOPT_BASE
        assert not (positions < borrowed).any(), \
            (component.name, path[-1].id, borrowed, "adopts_past_borrowed (duplicates)")


def _window_node(node: Node, target: int) -> Node:
    """The first node from ``node`` up that starts at or before ``target``."""
    while node.start > target and node.parent is not None:
        node = node.parent
    return node


def _path(node: Node) -> list[Node]:
    """The nodes from below the root down to ``node``."""
    path = []
    while node.parent is not None:
        path.append(node)
        node = node.parent
    return path[::-1]


def flags_test(plan: Plan, options: settings) -> Callable[[], None]:
    """A hypothesis test: serve random requests (checkpoints at every hint, windows slid
    or not), evict by component name now and then, and check the flags on the tree."""

    @options
    @given(data=st.data())
    def test(data: st.DataObject) -> None:
        cache = PrefixCache(plan.config(full_pages=16))
        bases: list[list[int]] = [[]]
        for _ in range(data.draw(st.integers(1, 8), label="requests")):
            base = data.draw(st.sampled_from(bases), label="base")
            cut = data.draw(st.integers(0, len(base)), label="cut")
            tail = data.draw(st.lists(st.integers(0, VOCAB), max_size=12), label="tail")
            bases.append(_serve(cache, base[:cut] + tail, data))
            if data.draw(st.booleans(), label="evict?"):
                cache.evict(**{name: data.draw(st.integers(0, 8), label=name)
                               for name in cache.names})
            cache.check_invariants()
            check_flags(cache)

    return test


def _serve(cache: PrefixCache, tokens: list[int], data: st.DataObject) -> list[int]:
    try:
        lease = cache.admit(tokens)
        for position in lease.checkpoint_hints:
            cache.checkpoint(lease, position)
    except OutOfSlotsError:
        for lease in cache.leases():
            cache.abort(lease)
        return tokens
    if any(spec.windowed for spec in cache.config.specs) and \
            data.draw(st.booleans(), label="slide?"):
        cache.slide_window(lease)
    cache.finish(lease)
    return tokens
