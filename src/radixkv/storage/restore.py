"""How much of a prompt L3 can restore: each component's hit rule, from its own spec.

A restore of key positions ``[start, cut)`` (whole pages) below a prefix the tree already
serves needs, per component: a per-token component the pages of ``[start, cut)`` from its
``window_start(cut)`` on (FULL: every page; a window component: the pages of its last
window; chunked local: those of its last chunk), a per-value component (MAMBA) its value at
``cut`` (states are stored at the positions nodes end at, checkpoints included). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from ..components.base import Component


def needed_pages(component: Component, start: int, cut: int, page: int) -> tuple[int, int]:
    """Page indices ``[first, stop)`` of ``component``'s keys a restore of ``[start, cut)``
    must bring (for a per-value component, the one page whose end is ``cut``)."""
    if not component.per_token:
        return cut // page - 1, cut // page
    begin = max(start, component.window_start(cut) // page * page)
    return begin // page, cut // page


def best_cut(components: Sequence[Component], start: int, limit: int, page: int,
             present: Sequence[Sequence[bool]]) -> int | None:
    """The largest page boundary ``cut`` in ``(start, limit]`` every component can restore:
    ``present[c][i]`` says whether page ``start // page + i`` of component ``c`` is there
    (missing entries count as absent); ``None`` when no cut qualifies. O(pages x
    components)."""
    first = start // page
    gaps = [list(accumulate((not flag for flag in flags), initial=0)) for flags in present]

    def complete(index: int, low: int, high: int) -> bool:
        table = gaps[index]
        low, high = low - first, high - first
        if low < 0 or high > len(table) - 1:
            return False
        return table[high] - table[low] == 0

    for cut in range(limit - limit % page, start, -page):
        if all(complete(i, *needed_pages(c, start, cut, page)) for i, c in enumerate(components)):
            return cut
    return None
