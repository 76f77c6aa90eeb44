"""What the benchmark drives: one interface, one adapter per tree under test.

``radixkv`` is adapted here; peers (SGLang's Python and Rust tree cores) live in
:mod:`radixkv.bench.peers` and are loaded only when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..cache import CacheConfig, Lease, PrefixCache
from ..errors import OutOfSlotsError

COMPONENT_SETS = ("full", "full+swa", "full+mamba")
SWA_WINDOW = 128


@dataclass(frozen=True)
class BenchShape:
    """The cache under test (spec §4): component set, page size, pool sizes."""

    components: str = "full"
    page_size: int = 1
    kv_size: int = 500_000
    request_rows: int = 5100

    @property
    def state_slots(self) -> int:
        return max(2 * self.request_rows, 200)


class BenchCache(Protocol):
    """The operations of spec §5 (and ``admit_finish``), on one fresh cache."""

    page_size: int

    def insert_with_fallback(self, seq: list[int]) -> bool: ...
    def fill(self, seq: list[int]) -> bool: ...
    def match(self, seq: list[int]) -> tuple[int, Any]: ...
    def lock_unlock(self, node: Any) -> None: ...
    def evict(self, num_tokens: int) -> None: ...
    def prepare_release(self, seq: list[int]) -> Any: ...
    def release(self, request: Any) -> None: ...
    def admit_finish(self, seq: list[int]) -> None: ...
    def check(self) -> None: ...


class RadixKVCache:
    """radixkv's PrefixCache behind the benchmark interface: the caller-held path for
    inserts (allocate → insert) and a lease for the end-of-request path (admit → finish)."""

    def __init__(self, shape: BenchShape) -> None:
        self.mamba = shape.components == "full+mamba"
        extra: dict[str, Any] = {}
        if shape.components == "full+swa":
            extra = {"components": ("full", "swa"), "sliding_window": SWA_WINDOW}
        elif self.mamba:
            extra = {"components": ("full", "mamba"), "mamba_states": shape.state_slots,
                     "mamba_track_interval": shape.page_size}
        # lost-hit accounting off: the peers keep no such ledger, and it costs a few per
        # cent on matches that end past a MAMBA state or on a tombstone
        self.cache = PrefixCache(CacheConfig(capacity=shape.kv_size, page_size=shape.page_size,
                                             lost_hits=False, **extra))
        self.page_size = shape.page_size

    def insert_with_fallback(self, seq: list[int]) -> bool:
        cache, mamba = self.cache, self.mamba
        slots = cache.allocate(len(seq), state=mamba, evict=False)
        if slots is None:
            self.evict(2 * len(seq))
            slots = cache.allocate(len(seq), state=mamba, evict=False)
            if slots is None:
                return False
        cache.insert(seq, slots)
        return True

    def fill(self, seq: list[int]) -> bool:
        slots = self.cache.allocate(len(seq), state=self.mamba, evict=False)
        if slots is None:
            return False
        self.cache.insert(seq, slots)
        return True

    def match(self, seq: list[int]) -> tuple[int, Any]:
        found = self.cache.match(seq)
        return found.length, found.node

    def lock_unlock(self, node: Any) -> None:
        self.cache.unlock(self.cache.lock(node))

    def evict(self, num_tokens: int) -> None:
        if self.mamba:
            self.cache.evict(full=num_tokens, mamba=2)
        else:
            self.cache.evict(full=num_tokens)

    def prepare_release(self, seq: list[int]) -> Lease | None:
        try:
            lease = self.cache.admit(seq)
        except OutOfSlotsError:
            return None
        end = len(seq) - len(seq) % self.cache.page_size
        if self.mamba and end > lease.tree_owned:
            self.cache.checkpoint(lease, end)
        return lease

    def release(self, request: Any) -> None:
        self.cache.finish(request)

    def admit_finish(self, seq: list[int]) -> None:
        self.cache.finish(self.cache.admit(seq))

    def check(self) -> None:
        self.cache.check_invariants()
