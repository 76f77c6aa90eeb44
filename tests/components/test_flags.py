"""The class flags that let the tree skip a component hook must agree with that hook.

The tree trusts ``pins_whole_path``, ``pins_end_node``, ``pins_window``, ``per_token``,
``whole_when_complete`` and ``leaf_candidates`` instead of calling their hooks on its hot
paths; these tests run the conformance kit's flag check (:mod:`radixkv.testing.flags`) on a
branched hybrid tree.
"""

from __future__ import annotations

import pytest

from radixkv.core.node import Node
from radixkv.testing.flags import check_flags

from .support import AuditedCache, seq


def _branched_cache(page: int) -> AuditedCache:
    cache = AuditedCache(capacity=256, page_size=page, components=("full", "swa", "mamba"),
                         sliding_window=8, mamba_track_interval=8, mamba_states=32)
    for prompt in ([*seq(100, 24)], [*seq(100, 16), *seq(500, 16)], [*seq(100, 8), 7] * 2):
        lease = cache.admit(prompt)
        for hint in lease.checkpoint_hints:
            cache.checkpoint(lease, hint)
        cache.finish(lease)
    return cache


def _nodes(cache: AuditedCache) -> list[Node]:
    return [node for node in cache.tree.nodes.values() if node.parent is not None]


@pytest.mark.parametrize("page", [1, 4])
def test_each_flag_agrees_with_the_hook_it_replaces_on_every_node(page: int) -> None:
    cache = _branched_cache(page)
    assert len(_nodes(cache)) >= 4  # the prompts branch: the flags are checked on a real tree
    check_flags(cache.cache)  # the conformance kit's check, on every lock end of every node


def test_only_full_pins_the_whole_path_and_only_mamba_pins_its_end_node() -> None:
    kinds = {c.name: (c.pins_whole_path, c.pins_end_node, c.pins_window, c.per_token)
             for c in _branched_cache(1).tree.components}
    assert kinds == {"full": (True, False, False, True), "swa": (False, False, True, True),
                     "mamba": (False, True, False, False)}


def test_a_wrong_pins_window_flag_is_caught() -> None:
    """A window component whose lock pins more than its window must not claim the flag."""
    cache = _branched_cache(1)
    swa = cache.tree.components[1]
    swa.lock_boundary = lambda node, end: 0  # type: ignore[method-assign]
    with pytest.raises(AssertionError, match="pins_window"):
        check_flags(cache.cache)
