"""The conformance kit's reference model: what a cache's tree holds, read into plain data,
and which prefixes the components' *declared* rules make usable.

The model knows no node, edge or split. Per namespace it maps every cached page-aligned
prefix (a token tuple) to its last page: per per-token component the slot of each token
(``None``: no live value there), per state component the state at the page's end. From that
alone, for a prefix of length ``L`` within the structural match:

- a per-token component accepts ``L`` iff every position in ``[window_start(L), L)`` holds
  a live value (``window_start`` is the component's declared window; 0 for FULL);
- a state component accepts ``L`` iff ``L == 0`` or a state exists exactly at ``L``;

and a query's usable length is the largest page-aligned ``L`` every component accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cache import PrefixCache

Prefix = tuple[int, ...]
Slot = int | None


@dataclass(frozen=True)
class Rule:
    """The declared rule of one component: its name, whether it holds a slot per token,
    and the first position a prefix of ``L`` still needs (per-token components)."""

    name: str
    per_token: bool
    window_start: Callable[[int], int]

    def accepts(self, column: Sequence[Slot], states: dict[int, int], length: int) -> bool:
        """Whether this component accepts the prefix of ``length`` of a walk."""
        if not self.per_token:
            return length == 0 or length in states
        start = min(self.window_start(length), length)
        return all(slot is not None for slot in column[start:length])


def rules_of(cache: PrefixCache) -> list[Rule]:
    """The declared rule of each component of ``cache``, in tree order."""
    return [Rule(c.name, c.per_token, c.window_start) for c in cache.tree.components]


@dataclass(frozen=True)
class Walk:
    """A query run along the model: how far it matches structurally (whole pages), and per
    component the slots of the tokens on the way (per-token) or the states on the way
    (state components: position -> state slot)."""

    branch: int
    columns: list[list[Slot]]
    states: list[dict[int, int]]

    def accepted(self, rules: Sequence[Rule], length: int) -> bool:
        return all(rule.accepts(self.columns[i], self.states[i], length)
                   for i, rule in enumerate(rules))


Page = tuple[tuple[Slot, ...] | Slot, ...]
"""Per component: the page's slots (per-token) or the state at the page's end."""


class Reference:
    """The cache's tree read into plain data; see the module docstring."""

    def __init__(self, cache: PrefixCache) -> None:
        self.page = cache.page_size
        self.rules = rules_of(cache)
        self.normalize = cache.namespace_of
        self.pages: dict[Any, dict[Prefix, Page]] = {}
        self.cached = [0] * len(self.rules)
        """Per component: live tokens (per-token) or states held."""
        for namespace, root in cache.tree.roots.items():
            table: dict[Prefix, Page] = {}
            self.pages[namespace] = table
            stack: list[tuple[Any, Prefix]] = [(root, ())]
            while stack:
                node, prefix = stack.pop()
                for child in node.children.values():
                    key = node_key(child)
                    self._read(table, child, prefix, key)
                    stack.append((child, prefix + key))

    def _read(self, table: dict[Prefix, Page], node: Any, prefix: Prefix, key: Prefix) -> None:
        assert len(key) % self.page == 0, f"node {node.id} is not whole pages"
        columns: list[tuple[Slot, ...] | Slot] = []
        for index, rule in enumerate(self.rules):
            value = node.values[index]
            if rule.per_token:
                column = _slots(value, len(key))
                self.cached[index] += sum(slot is not None for slot in column)
                columns.append(column)
            else:
                state = None if value is None else int(value[0])
                self.cached[index] += state is not None
                columns.append(state)
        page = self.page
        for end in range(page, len(key) + 1, page):
            whole = prefix + key[:end]
            assert whole not in table, f"prefix {whole} is cached twice"
            table[whole] = tuple(
                column[end - page : end] if rule.per_token else  # type: ignore[index]
                (column if end == len(key) else None)
                for rule, column in zip(self.rules, columns))

    def table(self, namespace: Any) -> dict[Prefix, Page]:
        return self.pages.get(self.normalize(namespace), {})

    def walk(self, namespace: Any, tokens: Sequence[int]) -> Walk:
        """Run ``tokens`` along the cached prefixes of ``namespace``."""
        table, tokens = self.table(namespace), tuple(tokens)
        columns: list[list[Slot]] = [[] for _ in self.rules]
        states: list[dict[int, int]] = [{} for _ in self.rules]
        pos, page = 0, self.page
        while pos + page <= len(tokens):
            found = table.get(tokens[: pos + page])
            if found is None:
                break
            pos += page
            for index, rule in enumerate(self.rules):
                entry = found[index]
                if rule.per_token:
                    columns[index].extend(entry)  # type: ignore[arg-type]
                elif entry is not None:
                    states[index][pos] = entry  # type: ignore[assignment]
        return Walk(pos, columns, states)

    def usable(self, namespace: Any, tokens: Sequence[int]) -> tuple[int, list[int], Walk]:
        """(usable length, its primary slots, the walk) of a query."""
        walk = self.walk(namespace, tokens)
        for length in range(walk.branch, -1, -self.page):
            if walk.accepted(self.rules, length):
                slots = [s for s in walk.columns[0][:length] if s is not None]
                return length, slots, walk
        raise AssertionError("length 0 is always accepted")

    def usable_at(self, namespace: Any, prefix: Sequence[int]) -> bool:
        """Whether the whole ``prefix`` is usable."""
        return self.usable(namespace, prefix)[0] == len(prefix)


def node_key(node: Any) -> Prefix:
    """The tokens of one node's edge."""
    return tuple(np.frombuffer(node.key, dtype="<u4").tolist())


def prefix_of(node: Any) -> Prefix:
    """Tokens from the root to the end of ``node``."""
    parts = []
    while node.parent is not None:
        parts.append(node_key(node))
        node = node.parent
    return tuple(token for part in reversed(parts) for token in part)


def _slots(value: Any, length: int) -> tuple[Slot, ...]:
    if value is None:
        return (None,) * length
    assert len(value) == length, f"{len(value)} slots for {length} tokens"
    return tuple(int(slot) for slot in value)
