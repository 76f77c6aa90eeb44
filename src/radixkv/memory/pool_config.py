"""SlotPoolConfig: the frozen configuration of a :class:`~radixkv.memory.SlotPool`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from radixkv.errors import ConfigError

__all__ = ["SlotPoolConfig"]


def _plain_int(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"SlotPoolConfig.{field} must be an int, got {type(value).__name__}")
    return int(value)


@dataclass(frozen=True)
class SlotPoolConfig:
    """Configuration of a :class:`SlotPool`.

    Attributes:
        capacity: number of slots (tokens) in the pool; ``>= 0`` and a multiple of
            ``page_size``.
        page_size: tokens per page, the unit of allocation; ``>= 1``.
        name: a label used in messages and ``repr`` (e.g. which KV pool this is).

    Raises:
        ConfigError: on any invalid value (also on a wrong type: a float, a bool...).
    """

    capacity: int
    page_size: int = 1
    name: str = "kv"

    def __post_init__(self) -> None:
        capacity = _plain_int(self.capacity, "capacity")
        page_size = _plain_int(self.page_size, "page_size")
        if page_size < 1:
            raise ConfigError(f"SlotPoolConfig.page_size must be >= 1, got {page_size}")
        if capacity < 0:
            raise ConfigError(f"SlotPoolConfig.capacity must be >= 0, got {capacity}")
        if capacity % page_size:
            raise ConfigError(
                f"SlotPoolConfig.capacity ({capacity}) must be a multiple of page_size "
                f"({page_size})"
            )
        if not isinstance(self.name, str):
            raise ConfigError(f"SlotPoolConfig.name must be a str, got {type(self.name).__name__}")
        # Normalise numpy integers to plain ints (the dataclass is frozen).
        object.__setattr__(self, "capacity", capacity)
        object.__setattr__(self, "page_size", page_size)

    @property
    def num_pages(self) -> int:
        """``capacity // page_size``."""
        return self.capacity // self.page_size
