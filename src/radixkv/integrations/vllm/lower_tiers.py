"""radixkv's host tier and storage tier (L3) below the connector's row buffer.

The row buffer is radixkv's device tier here; a host buffer below it holds backups by the
write policy, and L3 pages shared by a fleet of engines are read into it and written from
it. Both buffers are numpy arrays in the scheduler's process (the worker's row buffer is
reached there, so the worker must share that process: one worker, ``uni`` executor).

vLLM asks the connector how much of a prompt it holds before it allocates, so a prefix that
the host tier or L3 holds is brought into the row buffer inside that question
(:class:`radixkv.integrations.restore.Restorer`, as the SGLang backend does inside
``match_prefix``): L3 is asked once per
request (under the wait policy), the host prefix is admitted with ``load_back`` and the
lease ends at once, leaving the prefix cached in rows, which is what the answer then counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from radixkv import HostTier, StorageLayout, StorageTier
from radixkv.integrations.vllm.host_copies import RowCopyEngine, poll_clock
from radixkv.integrations.vllm.settings import ConnectorSettings
from radixkv.storage.urls import store_from_url

__all__ = ["TierParts", "build_tiers"]

WAIT_POLLS = 4.0
"""How many polls a wait for a copy lasts (every copy completes at the first poll but for
backups held until their step has run)."""


@dataclass(frozen=True)
class TierParts:
    """What a cache with tiers below the row buffer is built from."""

    host: HostTier
    storage: StorageTier | None
    copy_engine: RowCopyEngine
    store: Any


def build_tiers(settings: ConnectorSettings, row_shape: tuple[int, ...], dtype: Any,
                model: str, *, negative_control: bool = False) -> TierParts | None:
    """The host tier (and L3) ``settings`` ask for, for rows of ``row_shape`` (layers,
    2 x KV heads x head size) and numpy ``dtype``; ``None`` for none."""
    if settings.host_tokens is None:
        return None
    host = HostTier(capacity=settings.host_tokens, write_policy=settings.write_policy,
                    wait_timeout_s=WAIT_POLLS, clock=poll_clock())
    engine = RowCopyEngine(settings.host_tokens, row_shape, dtype,
                           negative_control=negative_control)
    if settings.storage is None:
        return TierParts(host, None, engine, None)
    layout = StorageLayout(
        model=model, dtype=np.dtype(dtype).name, page_size=settings.page_size,
        component="full", layers=(0, row_shape[0] if row_shape else 1), row_shape=row_shape,
        layout="radixkv vLLM connector rows: per layer, every KV head's key then value")
    storage = StorageTier(layouts=(layout,), prefetch_threshold=settings.prefetch_threshold,
                          wait_policy=settings.wait_policy, timeout_s=settings.timeout_s)
    return TierParts(host, storage, engine, store_from_url(settings.storage,
                                                           settings.storage_prefix))
