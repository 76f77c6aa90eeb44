"""Bounded waits of the scheduler's thread on the storage tier's I/O thread.

Every such wait ends by a deadline on the tier's clock (``StorageTier.clock``), whatever the
store does: a store that never answers costs the waiter ``StorageTier.wait_timeout_s``, not
forever. The clock is read once per round, and a round blocks at most
:data:`~radixkv.storage.storage_config.WAIT_ROUND_S` real seconds, so a fake clock that a test
advances per reading turns the bound into a count of rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, wait

from .storage_config import WAIT_ROUND_S


def wait_until(futures: Iterable[Future[object]], deadline: float,
               clock: Callable[[], float]) -> bool:
    """Block until every one of ``futures`` is done or ``clock()`` passed ``deadline``;
    whether they all are done. Mutates nothing."""
    running = [future for future in futures if not future.done()]
    while running:
        left = deadline - clock()
        if left <= 0:
            return False
        wait(running, min(left, WAIT_ROUND_S))
        running = [future for future in running if not future.done()]
    return True
