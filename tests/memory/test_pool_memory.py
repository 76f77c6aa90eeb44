"""A slot pool whose own tables cannot fit in memory is a configuration error raised before
anything is allocated (issue #33: ``HostTier(capacity=2**40)`` gave numpy's MemoryError)."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv import CacheConfig, HostTier, PrefixCache
from radixkv.errors import ConfigError
from radixkv.memory import SlotPool, SlotPoolConfig, pool_memory

HUGE = 1 << 40  # 8 TiB of page table alone: past any machine


def test_a_host_tier_too_large_for_memory_is_refused_naming_the_bytes() -> None:
    config = CacheConfig(capacity=64, page_size=4, host=HostTier(capacity=HUGE))
    with pytest.raises(ConfigError, match=r"'host full' of 1,099,511,627,776 slots would "
                                          r"take .* TiB \([\d,]+ bytes\)"):
        PrefixCache(config)


def test_a_device_capacity_too_large_for_memory_is_refused() -> None:
    with pytest.raises(ConfigError, match="for its slot tables alone"):
        PrefixCache(CacheConfig(capacity=HUGE, page_size=16))


def test_the_check_uses_the_memory_the_kernel_says_is_available(
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = SlotPoolConfig(capacity=1 << 24, page_size=16, name="kv")  # ~130 MiB of tables
    monkeypatch.setattr(pool_memory, "available_memory", lambda: 100 << 20)
    with pytest.raises(ConfigError, match=r"this machine has 100\.0 MiB available"):
        SlotPool(config)
    monkeypatch.setattr(pool_memory, "available_memory", lambda: None)  # unknown: allowed
    assert SlotPool(config).capacity == 1 << 24


@pytest.mark.parametrize(("capacity", "page_size"), [(4096, 1), (4096, 16), (0, 4)])
def test_table_bytes_counts_what_a_pool_allocates(capacity: int, page_size: int) -> None:
    config = SlotPoolConfig(capacity=capacity, page_size=page_size)
    pool = SlotPool(config)
    names = [name for kind in SlotPool.__mro__ for name in getattr(kind, "__slots__", ())]
    arrays = [getattr(pool, name) for name in names]
    allocated = sum(a.nbytes for a in arrays if isinstance(a, np.ndarray))
    assert pool_memory.table_bytes(config) == allocated

