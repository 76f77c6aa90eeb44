"""A lease is accepted only as the very object the cache issued (issue 11, item 5).

A shallow copy shares the original's lock receipt and slot buffers: finishing the copy and
then the original used to insert and free twice, then raise LockError with tree-held slots
marked free. Every call on a copy (or a deep copy) is refused with nothing changed, and the
original keeps working."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from radixkv.cache import Lease, LeaseState
from radixkv.errors import LeaseError

from ..audited import AuditedCache, assert_refused

SYSTEM = list(range(1, 13))


def refused(cache: AuditedCache, call: Callable[[], Any]) -> None:
    assert_refused(cache, LeaseError, call, "not the lease this cache issued")


def busy(**config: Any) -> tuple[AuditedCache, Lease]:
    cache = AuditedCache(capacity=64, page_size=4, **config)
    cache.finish(cache.admit(SYSTEM))
    lease = cache.admit([*SYSTEM, 20, 21, 22, 23, 24])
    assert lease.cached_length == 12 and lease.lock is not None
    return cache, lease


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
@pytest.mark.parametrize("op", ["finish", "abort", "commit", "extend"])
def test_a_copy_of_a_lease_is_refused_and_the_original_still_works(clone: Any, op: str) -> None:
    cache, lease = busy()
    twin = clone(lease)
    calls = {
        "finish": lambda: cache.finish(twin),
        "abort": lambda: cache.abort(twin),
        "commit": lambda: cache.commit(twin),
        "extend": lambda: cache.extend(twin, [5, 6]),
    }
    refused(cache, calls[op])
    assert cache.finish(lease) == 16
    assert lease.state is LeaseState.FINISHED
    stats = cache.stats()
    assert stats.active_leases == 0 and stats.components["full"].protected == 0
    assert stats.available + stats.components["full"].cached == 64


def test_a_copy_is_refused_for_checkpoint_and_slide_window() -> None:
    cache = AuditedCache(capacity=64, page_size=4, components=("full", "swa", "mamba"),
                         sliding_window=4, mamba_track_interval=4, mamba_states=8)
    lease = cache.admit([*SYSTEM, 20, 21, 22, 23, 24])
    twin = copy.copy(lease)
    refused(cache, lambda: cache.checkpoint(twin, 16))
    refused(cache, lambda: cache.slide_window(twin))
    assert cache.checkpoint(lease, 16) is not None
    assert cache.slide_window(lease) == 12
    assert cache.finish(lease) == 16


def test_a_lease_whose_id_was_changed_is_refused() -> None:
    cache, lease = busy()
    other = cache.admit([7, 7, 7, 7])
    lease.id, real = other.id, lease.id
    refused(cache, lambda: cache.finish(lease))
    lease.id = real
    cache.finish(lease)
    cache.finish(other)
