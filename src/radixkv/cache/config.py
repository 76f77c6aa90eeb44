"""CacheConfig: everything a PrefixCache is built from, validated once."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.config import TreeConfig
from ..errors import ConfigError

SUPPORTED_COMPONENTS = (("full",),)


@dataclass(frozen=True)
class CacheConfig:
    """Configuration of a :class:`~radixkv.PrefixCache`.

    ``capacity``: device KV slots (tokens), a multiple of ``page_size``. ``page_size``: tokens
    per page, the unit of matching, allocation and hashing. ``policy``: eviction policy name
    (see :mod:`radixkv.core.policy`). ``components``: attention types, FULL first.
    ``bigram``: EAGLE bigram keys. ``events``: queue KV events for ``take_events()``.
    ``default_ttl``: tlru time-to-live (ticks) of a request that gives none.
    """

    capacity: int
    page_size: int = 1
    policy: str = "lru"
    components: tuple[str, ...] = ("full",)
    bigram: bool = False
    events: bool = False
    default_ttl: int = 1024

    def __post_init__(self) -> None:
        tree = self.tree_config()  # validates page_size, policy and ttl
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int):
            raise ConfigError(f"capacity must be an int, got {self.capacity!r}")
        if self.capacity < 0 or self.capacity % tree.page_size:
            raise ConfigError(
                f"capacity must be >= 0 and a multiple of page_size {tree.page_size}, "
                f"got {self.capacity}"
            )
        if tuple(self.components) not in SUPPORTED_COMPONENTS:
            raise ConfigError(
                f"unsupported component combination {self.components!r}; "
                f"supported: {', '.join(map(repr, SUPPORTED_COMPONENTS))}"
            )

    def tree_config(self) -> TreeConfig:
        """The part of this configuration the tree core needs."""
        return TreeConfig(
            page_size=self.page_size,
            bigram=self.bigram,
            policy=self.policy,
            events=self.events,
            default_ttl=self.default_ttl,
        )
