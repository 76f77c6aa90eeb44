"""AuditedCache: the PrefixCache wrapper every scenario test drives, so that
``check_invariants()`` (and any extra audit) runs after every call that may mutate."""

from __future__ import annotations

from typing import Any

from radixkv import CacheConfig, PrefixCache

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
