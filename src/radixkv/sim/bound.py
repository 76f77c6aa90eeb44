"""The reuse bound of a trace: what a cache could serve at best, from the trace alone.

Each request, in the trace's order (a generated workload's order puts a next turn after its
parent), could at best reuse the longest page-exact prefix of its prompt that an earlier
request of its namespace began with (that request's prompt, or its cached answer: all of
the answer but the last token, which is never fed back), and never the prompt's last
token (its logits are needed). No run can hit more (a request's hit is capped at what
earlier requests had, see :mod:`radixkv.sim.engine`), so an unbounded cache with no
concurrency reaches it, and a run's hit rate over it says what memory, timing and routing
cost. Simulation timing can reorder a generated chat's turns against other chats' turns;
only a prompt that ends on a page boundary inside another prompt can then move a page
between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.keys import validate_namespace
from .keys import PrefixIndex, SequenceKeys
from .requests import SimRequest, cached_parts


@dataclass(frozen=True)
class Reuse:
    """Prompt tokens and the reusable part of them (the bound), of a trace or a namespace."""

    prompt_tokens: int
    reusable_tokens: int

    @property
    def hit_rate(self) -> float:
        return self.reusable_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def plus(self, prompt: int, reusable: int) -> Reuse:
        return Reuse(self.prompt_tokens + prompt, self.reusable_tokens + reusable)


def allowed_hits(requests: Sequence[SimRequest], page: int) -> list[int]:
    """Per request, the most prompt tokens it could reuse (see the module docstring).
    O(total tokens) in numpy plus O(log pages) set lookups per request."""
    keys = SequenceKeys([cached_parts(r) for r in requests], page)
    indexes: dict[object, PrefixIndex] = {}
    allowed = []
    for number, request in enumerate(requests):
        index = indexes.setdefault(validate_namespace(request.namespace), PrefixIndex(page))
        sequence = keys.of(number)
        prompt = sequence[: len(request.prompt) // page]
        cap = (len(request.prompt) - 1) // page
        allowed.append(index.longest(prompt, cap))
        index.add(sequence[index.longest(sequence) // page :])
    return allowed


def namespace_name(namespace: object) -> str:
    """A namespace as report.json names it: ``default``, or its parts joined by ``/``."""
    parts = [str(part) for part in validate_namespace(namespace) if part is not None]
    return "/".join(parts) or "default"


def reuse_bound(requests: Sequence[SimRequest], page: int) -> dict[str, Any]:
    """The trace's bound at ``page`` tokens a page, overall and per namespace, as plain data
    for report.json: ``token_hit_rate``, ``reusable_tokens``, ``prompt_tokens`` and the same
    three per namespace in ``by_namespace``."""
    total, spaces = Reuse(0, 0), dict[str, Reuse]()
    for request, allowed in zip(requests, allowed_hits(requests, page), strict=True):
        name = namespace_name(request.namespace)
        spaces[name] = spaces.get(name, Reuse(0, 0)).plus(len(request.prompt), allowed)
        total = total.plus(len(request.prompt), allowed)
    return {"page_size": page, **_plain(total),
            "by_namespace": {name: _plain(reuse) for name, reuse in sorted(spaces.items())}}


def _plain(reuse: Reuse) -> dict[str, Any]:
    return {"token_hit_rate": reuse.hit_rate, "reusable_tokens": reuse.reusable_tokens,
            "prompt_tokens": reuse.prompt_tokens}
