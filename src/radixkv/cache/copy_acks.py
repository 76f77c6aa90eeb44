"""The cache's ear for the host tier's copies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..host.host_controller import CopyRecord

if TYPE_CHECKING:
    from .cache_base import CacheBase


class CopyAcks:
    """The cache's :class:`~radixkv.host.parts.CopyListener`, handed to the host tier at
    construction: a part of its own, so that the cache's public surface stays the request
    API. The host tier calls it alone."""

    __slots__ = ("_cache",)

    def __init__(self, cache: CacheBase) -> None:
        self._cache = cache

    def copy_reported(self, record: CopyRecord, ok: bool) -> None:
        self._cache._copy_reported(record, ok)
