"""The tiers below SGLang's KV pool: radixkv's host tier over a host buffer of SGLang's KV
rows, and its storage tier (L3) shared by a fleet of engines.

SGLang allocates a request's KV itself, after ``match_prefix``; so a prefix that host memory
or L3 holds is brought onto the device inside ``match_prefix``
(:class:`radixkv.integrations.restore.Restorer`), before SGLang sees the match: the pages L3
holds are fetched into host slots (under the wait policy), the host prefix is admitted with
``load_back`` (device slots from SGLang's own allocator, the copies by
:class:`~.copy_engine.SGLangCopyEngine`), and the match SGLang gets then covers them as
ordinary device-cached KV. Writes follow the host tier's write policy:
a finished request's pages are backed up to the host, and from there written to L3, at the
next ``cache.poll()``, which the backend runs after every batch (SGLang's
``flush_pending_backups``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from radixkv import HostTier, StorageLayout, StorageTier
from radixkv.integrations.sglang.copy_engine import SGLangCopyEngine, layout_dtype, row_shape
from radixkv.integrations.sglang.settings import TierSettings
from radixkv.storage.urls import store_from_url

__all__ = ["TierParts", "build_tiers"]


@dataclass(frozen=True)
class TierParts:
    """What a cache with tiers below the device is built from."""

    host: HostTier
    storage: StorageTier | None
    copy_engine: SGLangCopyEngine
    store: Any


def build_tiers(settings: TierSettings, kv_pool: Any, page_size: int, model: str,
                page_hash: str, *, negative_control: bool = False) -> TierParts | None:
    """The host tier (and L3) ``settings`` ask for over ``kv_pool``; ``None`` for none."""
    if settings.host_tokens is None:
        return None
    settings.check_page(page_size)
    host = HostTier(capacity=settings.host_tokens, write_policy=settings.write_policy)
    engine = SGLangCopyEngine(kv_pool, settings.host_tokens + page_size,
                              negative_control=negative_control)
    if settings.storage is None:
        return TierParts(host, None, engine, None)
    storage = StorageTier(layouts=(layout_of(kv_pool, page_size, model, page_hash),),
                          prefetch_threshold=settings.prefetch_threshold,
                          wait_policy=settings.wait_policy, timeout_s=settings.timeout_s)
    return TierParts(host, storage, engine, store_from_url(settings.storage, settings.prefix))


def layout_of(kv_pool: Any, page_size: int, model: str, page_hash: str) -> StorageLayout:
    """What one stored page of ``kv_pool`` is (everything that decides its bytes)."""
    start = int(getattr(kv_pool, "start_layer", 0) or 0)
    layers, width = row_shape(kv_pool)
    text = (f"sglang MHATokenToKVPool NHD; per layer key then value; heads "
            f"{kv_pool.head_num}; head_dim {kv_pool.head_dim}; v_head_dim {kv_pool.v_head_dim}")
    return StorageLayout(model=model, dtype=layout_dtype(kv_pool.store_dtype),
                         page_size=page_size, component="full", layers=(start, start + layers),
                         row_shape=(layers, width), layout=text, page_hash=page_hash)
