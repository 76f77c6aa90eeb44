"""A component that says ``adopts_past_borrowed`` (the tree then hands its ``adopt_path``
only the nodes ending after ``borrowed``) must adopt and return exactly what it does given
the whole path: checked on random paths of a FULL + SWA cache, with tombstones and evicted
values on them, at every borrowed node boundary."""

from __future__ import annotations

import random

import numpy as np
import pytest

from radixkv.components.window import WindowInput

from .support import AuditedCache


@pytest.mark.parametrize("seed", range(6))
def test_adoption_ignores_the_nodes_that_end_at_or_before_borrowed(seed: int) -> None:
    rng = random.Random(seed)
    cache = AuditedCache(capacity=96, page_size=1, components=("full", "swa"),
                         sliding_window=3)
    for _ in range(25):
        lease = cache.admit([rng.randint(1, 3) for _ in range(rng.randint(1, 12))])
        if rng.random() < 0.4:
            cache.slide_window(lease)  # tombstones
        cache.finish(lease)
        if rng.random() < 0.3:
            cache.evict(rng.randint(1, 8))
    tree, checked = cache.tree, 0
    for leaf in [node for node in tree.nodes.values() if not node.children]:
        path, node = [], leaf
        while node.parent is not None:
            path.append(node)
            node = node.parent
        path.reverse()
        end = path[-1].end
        slots = np.arange(1000, 1000 + end, dtype=np.int64)
        for borrowed in [0] + [node.end for node in path]:
            below = [node for node in path if node.end > borrowed]
            for component in tree.components:
                assert component.adopts_past_borrowed
                for dropped in {0, borrowed, min(end, borrowed + 2)}:
                    data = slots if component.index == 0 else WindowInput(slots, dropped)
                    whole = component.adopt_path(path, data, borrowed)
                    part = component.adopt_path(below, data, borrowed)
                    assert [(n.id, v.tolist()) for n, v in whole[0]] == \
                        [(n.id, v.tolist()) for n, v in part[0]]
                    assert whole[1].tolist() == part[1].tolist()
                    checked += 1
    assert checked
