"""What one engine step moves between vLLM's paged KV cache and the connector's row buffer.

The scheduler side builds a :class:`StepPlan` in ``build_connector_meta``; the worker side
applies it: its loads before the step's forward (rows into vLLM's slots), its saves after it
(vLLM's slots into rows). A vLLM *slot* is ``block_id * block_size + offset``; a *row* is an
index into the row buffer, a slot id of the cache's pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["StepPlan", "Transfer", "vllm_slots"]

IntArray = npt.NDArray[np.int64]


def _empty() -> IntArray:
    return np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Transfer:
    """Pairs of a row and a vLLM slot, one per token position (equal lengths)."""

    rows: IntArray = field(default_factory=_empty)
    slots: IntArray = field(default_factory=_empty)

    def __len__(self) -> int:
        return len(self.rows)

    @staticmethod
    def join(parts: Sequence[Transfer]) -> Transfer:
        parts = [part for part in parts if len(part)]
        if not parts:
            return Transfer()
        return Transfer(np.concatenate([part.rows for part in parts]),
                        np.concatenate([part.slots for part in parts]))


@dataclass(frozen=True)
class StepPlan:
    """One step's copies: ``loads`` read rows into vLLM's slots before the forward,
    ``saves`` write vLLM's slots into rows after it. Within a step no row is both loaded
    and saved (loaded rows are the tree's, locked; saved rows are fresh)."""

    loads: Transfer = field(default_factory=Transfer)
    saves: Transfer = field(default_factory=Transfer)


def vllm_slots(block_ids: Sequence[int] | IntArray, block_size: int,
               positions: IntArray) -> IntArray:
    """vLLM's slots of a request's token ``positions``, given its block table. Raises
    ``ValueError`` for a position past the table."""
    table = np.asarray(block_ids, dtype=np.int64)
    if len(positions) and int(positions.max()) >= len(table) * block_size:
        raise ValueError(f"position {int(positions.max())} is past the request's "
                         f"{len(table)} blocks of {block_size}")
    slots: IntArray = table[positions // block_size] * block_size + positions % block_size
    return slots
