"""What every workload the engines run must be: one request per id, parents first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class Linked(Protocol):
    """A request of a workload: its id, and the request it follows (a chat's previous turn)."""

    @property
    def rid(self) -> int: ...

    @property
    def parent(self) -> int | None: ...


def check_workload(requests: Iterable[Linked]) -> None:
    """Raise ``ValueError`` unless request ids are unique and every parent comes earlier."""
    seen: set[int] = set()
    for request in requests:
        if request.rid in seen:
            raise ValueError(f"duplicate request id {request.rid}")
        if request.parent is not None and request.parent not in seen:
            raise ValueError(f"request {request.rid}: parent {request.parent} does not come "
                             "before it")
        seen.add(request.rid)
