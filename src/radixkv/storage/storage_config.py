"""StorageTier: the configuration of the shared storage tier (L3) of a cache."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..components.spec import check_int
from ..core.tree_config import normalise_ints
from ..errors import ConfigError, ConfigTypeError
from .layout import StorageLayout

WAIT_POLICIES = ("best_effort", "wait_complete", "timeout")
"""How long ``admit`` waits for an L3 prefetch of its prompt: not at all (it takes what has
arrived), until it is complete (at most ``wait_timeout_s``), or at most ``timeout_s``
seconds."""

WAIT_ROUND_S = 0.05
"""The longest real time a wait on the store's I/O blocks before it reads its clock again."""


@dataclass(frozen=True)
class StorageTier:
    """The L3 tier of a :class:`~radixkv.CacheConfig` (``CacheConfig(host=HostTier(...),
    storage=StorageTier(...))``); the store itself is given to the cache
    (``PrefixCache(config, copy_engine, storage=backend)``).

    ``layouts``: one :class:`StorageLayout` per component of the cache (its ``component``
    names it), with the cache's page size, page hash and bigram setting: what the stored
    bytes are, and so the keys. Writes follow the host tier's write policy: with
    ``write_through`` / ``write_through_selective`` a node's pages go to L3 when its host
    backup is acknowledged, with ``write_back`` when host eviction drops them (a node's
    path first, so a prefix lookup finds it), and at ``close()`` what the host still holds
    when ``flush_on_close`` (the default; write-through policies wrote it already, so it
    changes nothing there). ``write``: False makes a read-only engine. Reads:
    ``admit(..., load_back=True)`` (and :meth:`~radixkv.PrefixCache.prefetch`) asks the
    store how much more of the prompt it holds once device and host prefixes are
    counted, and fetches it into host slots when
    that is at least ``prefetch_threshold`` tokens; ``wait_policy`` (:data:`WAIT_POLICIES`)
    says how long admit waits for that fetch (``timeout_s`` for ``timeout``); what arrived
    by then joins the tree as host-only nodes and is loaded back with the rest of the
    host prefix.

    ``wait_timeout_s`` bounds every wait of the scheduler's thread on the store's I/O,
    whatever the store does (one that never answers included): a ``wait_complete`` admit
    then admits with what arrived, as ``timeout`` does; ``wait()``, ``reset()`` and
    ``close()`` raise :class:`~radixkv.errors.StorageTimeoutError`, the I/O still in flight
    (its host slots held), so the call can be retried. ``clock``: what the waits are
    measured on, a callable returning seconds (``time.monotonic``; a test may give a fake
    one, read once per round of at most :data:`WAIT_ROUND_S` real seconds). ``io_thread``:
    the store's calls run on an I/O thread of their own (the default); ``False`` runs each
    on the scheduler's thread when it is made, so every read has arrived when it is looked
    at (no overlap with the scheduler: for a store that answers at once, or a test whose
    course must not depend on a thread's speed). Raises :class:`ConfigError` /
    :class:`ConfigTypeError` on a bad value.
    """

    layouts: tuple[StorageLayout, ...]
    prefetch_threshold: int = 256
    wait_policy: str = "best_effort"
    timeout_s: float = 1.0
    write: bool = True
    flush_on_close: bool = True
    wait_timeout_s: float = 60.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)
    io_thread: bool = True

    def __post_init__(self) -> None:
        normalise_ints(self)
        layouts = self.layouts
        if isinstance(layouts, StorageLayout) or not isinstance(layouts, Sequence):
            raise ConfigTypeError("StorageTier.layouts must be a sequence of StorageLayout")
        layouts = tuple(layouts)
        if not layouts or not all(isinstance(item, StorageLayout) for item in layouts):
            raise ConfigTypeError("StorageTier.layouts must hold one StorageLayout a component")
        names = [item.component for item in layouts]
        if len(set(names)) != len(names):
            raise ConfigError(f"StorageTier.layouts names a component twice: {names}")
        object.__setattr__(self, "layouts", layouts)
        check_int("prefetch_threshold", self.prefetch_threshold, 0)
        if self.wait_policy not in WAIT_POLICIES:
            raise ConfigError(f"unknown wait policy {self.wait_policy!r}; valid: "
                              f"{', '.join(WAIT_POLICIES)}")
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)) \
                or not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be a number > 0, got {self.timeout_s!r}")
        if not isinstance(self.write, bool):
            raise ConfigTypeError("StorageTier.write must be a bool")
        for flag in ("flush_on_close", "io_thread"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigTypeError(f"StorageTier.{flag} must be a bool")
        bound = self.wait_timeout_s
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) \
                or not math.isfinite(bound) or not bound > 0:
            raise ConfigError(f"StorageTier.wait_timeout_s must be a finite number > 0, "
                              f"got {bound!r}")
        if not callable(self.clock):
            raise ConfigTypeError(f"StorageTier.clock must be a callable returning seconds, "
                                  f"got {self.clock!r}")

    def layout_of(self, component: str) -> StorageLayout | None:
        """The layout of the component called ``component``, if any."""
        for layout in self.layouts:
            if layout.component == component:
                return layout
        return None

    def check_against(self, names: Sequence[str], page_size: int, page_hash: str,
                      bigram: bool) -> None:
        """Raise :class:`ConfigError` unless the layouts fit a cache with these components
        and key settings (one layout each, the same page size, page hash and bigram)."""
        missing = [name for name in names if self.layout_of(name) is None]
        extra = [item.component for item in self.layouts if item.component not in names]
        if missing or extra:
            raise ConfigError(f"StorageTier.layouts must name each component once "
                              f"(missing {missing}, unknown {extra})")
        for item in self.layouts:
            if (item.page_size, item.page_hash, item.bigram) != (page_size, page_hash, bigram):
                raise ConfigError(
                    f"the {item.component!r} layout has page_size={item.page_size}, "
                    f"page_hash={item.page_hash!r}, bigram={item.bigram}; the cache has "
                    f"{page_size}, {page_hash!r}, {bigram}")
