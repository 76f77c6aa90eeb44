"""TreeCore is its data plus parts: the hot verbs are the parts' own bound methods, a
subclass cannot silently hide them, and reset keeps every part's references valid."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv import CacheConfig
from radixkv.core.keys import DEFAULT_NAMESPACE, encode_tokens
from radixkv.core.tree import TreeCore


def tree() -> TreeCore:
    config = CacheConfig(capacity=16, page_size=1)
    return TreeCore(config.tree_config(), config.make_components())


def test_the_hot_verbs_are_the_parts_bound_methods() -> None:
    core = tree()
    for name, part in (("insert", core.inserter), ("lock", core.locker),
                       ("lock_match", core.locker), ("move_down", core.locker),
                       ("unlock", core.locker), ("evict", core.evictor)):
        bound = getattr(core, name)
        assert bound.__self__ is part and bound.__func__ is getattr(type(part), name)


def test_a_subclass_defining_a_bound_verb_is_refused() -> None:
    with pytest.raises(TypeError, match="insert"):
        class Hiding(TreeCore):
            def insert(self, *args: object, **kwargs: object) -> None:  # type: ignore[override]
                raise AssertionError("never called")


def test_after_reset_the_parts_see_the_trees_new_nodes() -> None:
    core = tree()
    key = encode_tokens([1, 2, 3])
    core.insert(key, [np.arange(3)], DEFAULT_NAMESPACE)
    core.reset()
    assert core.nodes == {} and core.roots == {} and core.cached == [0]
    result = core.insert(key, [np.arange(3, 6)], DEFAULT_NAMESPACE)
    assert result.node is not None
    receipt = core.lock(result.node)
    assert core.protected == [3]
    core.unlock(receipt)
    evicted = core.evict([3])
    assert evicted.evicted == [3] and core.nodes == {} and core.cached == [0]
