"""The tree node: plain attributes behind ``__slots__`` for C-speed attribute access."""

from __future__ import annotations

from typing import Any

import numpy as np


class Node:
    """One radix-tree edge and the node it ends in.

    ``key`` holds this edge's packed key elements (a whole number of pages); ``start`` is the
    key position (in elements) where the edge begins, so the edge covers
    ``[start, start + length)``; ``stop`` is the byte offset just after the edge in its
    namespace's packed key (a match walk moves by it without measuring the edge).
    ``values`` holds a value per component and tier (see :mod:`radixkv.core.tiers`; on
    the device tier ``values[c]`` is component ``c``'s, the
    component at index ``c`` of the tree's component list); ``locks[c]`` is component
    ``c``'s lock count, for every tier. A ``None`` value means that component holds nothing
    there (evicted, tombstoned, or never had). ``hashes`` caches the
    chained page digests once computed. Recency fields are logical ticks, not wall time.

    A value, once set, is never replaced in place: a split or an eviction gives the node a
    new ``values`` list (only a ``None`` entry is filled in place). So a list taken at match
    time still holds every value the match saw, and a match result can concatenate its
    slots later without reading the values while matching.
    """

    __slots__ = (
        "children",
        "created",
        "hashes",
        "hits",
        "id",
        "key",
        "last_access",
        "length",
        "locks",
        "namespace",
        "parent",
        "priority",
        "start",
        "stop",
        "ttl",
        "values",
    )

    def __init__(
        self,
        node_id: int,
        parent: Node | None,
        key: bytes,
        start: int,
        length: int,
        num_components: int,
        namespace: Any,
        tiers: int = 1,
    ) -> None:
        self.id = node_id
        self.parent = parent
        self.children: dict[bytes, Node] = {}
        self.key = key
        self.start = start
        self.length = length
        # a node's edge begins where its parent's ends; a split keeps the lower half's end
        self.stop: int = 0 if parent is None else parent.stop + len(key)
        self.values: list[np.ndarray | None] = [None] * (num_components * tiers)
        self.locks: list[int] = [0] * num_components
        self.last_access = 0
        self.created = 0
        self.hits = 0
        self.priority = 0
        self.ttl = 0
        self.hashes: list[bytes] | None = None
        self.namespace = namespace

    @property
    def end(self) -> int:
        """Key position just after this edge."""
        return self.start + self.length

    def __repr__(self) -> str:
        return f"Node(id={self.id}, start={self.start}, length={self.length}, locks={self.locks})"
