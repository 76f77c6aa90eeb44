"""AuditedCache: the PrefixCache wrapper every scenario test drives, so that
``check_invariants()`` (and any extra audit) runs after every call that may mutate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import RadixKVError

PURE = frozenset({"stats", "snapshot", "check_invariants", "take_events", "leases"})


class AuditedCache:
    """A PrefixCache whose every mutating call is followed by :meth:`audit` (also when the
    call raises). Subclasses extend :meth:`audit`."""

    def __init__(self, **config: Any) -> None:
        self.cache = PrefixCache(CacheConfig(**config))
        self.audit()

    def audit(self) -> None:
        self.cache.check_invariants()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.cache, name)
        if name in PURE or not callable(attr):
            return attr

        def audited(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            finally:
                self.audit()

        return audited


def assert_refused(cache: Any, error: type[Exception], call: Callable[[], object],
                   match: str | None = None) -> Exception:
    """``call()`` raises ``error`` (a RadixKVError; its message matching ``match``) and the
    cache's snapshot is exactly as before; returns the exception."""
    snap = cache.snapshot()
    with pytest.raises(error, match=match) as raised:
        call()
    assert isinstance(raised.value, RadixKVError), f"{raised.value!r} is no RadixKVError"
    assert cache.snapshot() == snap, "a refused call changed the cache"
    return raised.value
