"""Whether a slot pool's own tables fit in this machine's memory, asked before they are made.

A pool keeps O(capacity) tables (its page table, free-page ring, allocation map and
scratch): about 8 bytes a slot plus 25 a page. A capacity far past what the machine holds
(``HostTier(capacity=2**40)``: 8.8 TB) would otherwise end in numpy's ``MemoryError`` halfway
through construction, or in the kernel's OOM killer once the tables are touched; it is a
configuration error, raised before anything is allocated.
"""

from __future__ import annotations

import os

from radixkv.errors import ConfigError
from radixkv.memory.pool_config import SlotPoolConfig

__all__ = ["available_memory", "check_fits", "table_bytes"]

_ALWAYS_FITS = 64 << 20
"""Tables this small are never checked."""


def table_bytes(config: SlotPoolConfig) -> int:
    """Bytes of the tables a :class:`~radixkv.memory.SlotPool` of ``config`` allocates."""
    table = 8 * config.capacity if config.page_size > 1 else 0
    return table + 8 * config.page_size + 25 * config.num_pages


def available_memory() -> int | None:
    """Bytes the kernel says a new allocation can have without swapping (``MemAvailable``),
    else the machine's physical memory; ``None`` where neither can be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_fits(config: SlotPoolConfig) -> None:
    """Raise :class:`ConfigError`, naming the bytes, when the pool's tables would not fit
    in :func:`available_memory`."""
    needed = table_bytes(config)
    if needed <= _ALWAYS_FITS:  # most pools: no need to ask the kernel
        return
    memory = available_memory()
    if memory is not None and needed > memory:
        raise ConfigError(
            f"slot pool {config.name!r} of {config.capacity:,} slots would take "
            f"{_size(needed)} ({needed:,} bytes) for its slot tables alone; this machine "
            f"has {_size(memory)} available: lower the capacity")


def _size(count: int) -> str:
    value, unit = float(count), "bytes"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"
