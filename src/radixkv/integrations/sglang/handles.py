"""What SGLang holds for the backend: prefix handles (``req.last_node``) and lock receipts.

SGLang keeps whatever ``match_prefix`` returns as ``last_device_node`` in
``req.last_node`` and later calls ``lock(node)`` / ``unlock(TreeLock)`` (or
``inc_lock_ref(node)`` / ``dec_lock_ref(node, params)``) and ``path_device_indices(node)``
on it. A :class:`PrefixHandle` carries the radixkv match (its length and FULL slots) and
what is needed to find the prefix again; a lock's radixkv receipt travels inside SGLang's
own receipt types (:class:`Acquired`, :class:`Release`), so each lock releases exactly what
it pinned, however many locks a handle has.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt
from sglang.srt.mem_cache.base_prefix_cache import (  # type: ignore[import-not-found, unused-ignore]
    DecLockRefParams,
    IncLockRefResult,
)

__all__ = ["Acquired", "PrefixHandle", "Release"]

Namespace = tuple[object, object]


class PrefixHandle:
    """A matched prefix: ``length`` key elements in ``namespace`` (``match`` is the radixkv
    :class:`~radixkv.cache.results.MatchResult`, ``None`` for the empty prefix, the root).

    ``tokens`` are the raw tokens the prefix was matched with (enough to match it again);
    ``receipts`` the radixkv lock receipts taken on it and not yet released, oldest first.
    """

    __slots__ = ("length", "match", "namespace", "receipts", "tokens")

    def __init__(self, match: Any, tokens: npt.NDArray[np.int64],
                 namespace: Namespace | None) -> None:
        self.match = match
        self.length: int = 0 if match is None else int(match.length)
        self.tokens = tokens
        self.namespace = namespace
        self.receipts: list[Any] = []

    @classmethod
    def root(cls, namespace: Namespace | None = None) -> PrefixHandle:
        """The empty prefix (SGLang's root node) of ``namespace``."""
        return cls(None, np.zeros(0, np.int64), namespace)

    @property
    def is_root(self) -> bool:
        return self.length == 0

    def slots(self) -> npt.NDArray[np.int64]:
        """The prefix's FULL slots (SGLang KV indices), ``length`` of them."""
        if self.match is None or self.length == 0:
            return np.zeros(0, np.int64)
        slots: npt.NDArray[np.int64] = self.match.slots
        return slots

    def __repr__(self) -> str:
        return (f"PrefixHandle(length={self.length}, node={getattr(self.match, 'node', None)}, "
                f"namespace={self.namespace!r}, locks={len(self.receipts)})")


@dataclasses.dataclass
class Release(DecLockRefParams):  # type: ignore[misc, unused-ignore]
    """SGLang's release receipt carrying the radixkv lock receipt (``None``: nothing pinned,
    the lock of an empty prefix)."""

    radixkv_receipt: Any = None


@dataclasses.dataclass
class Acquired(IncLockRefResult):  # type: ignore[misc, unused-ignore]
    """SGLang's acquire result carrying the radixkv lock receipt."""

    radixkv_receipt: Any = None

    def to_dec_params(self) -> Release:
        return Release(radixkv_receipt=self.radixkv_receipt)
