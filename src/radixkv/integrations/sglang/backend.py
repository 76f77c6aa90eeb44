"""The SGLang ``BasePrefixCache`` backed by one radixkv :class:`~radixkv.PrefixCache`.

The cache's FULL pool *is* SGLang's ``token_to_kv_pool_allocator`` (through
:class:`~.allocator.SGLangSlotAllocator`): every slot in the tree is an SGLang KV index, and
what radixkv frees (duplicates on insert, evictions, ``reset``) goes to SGLang's ``free``
exactly once. SGLang's request flow (0.5.23, ``sglang/srt/mem_cache/common.py``) maps so:

- ``match_kv_cache`` -> :meth:`match_prefix`: ``cache.match``; ``req.last_node`` becomes a
  :class:`~.handles.PrefixHandle`, ``req.prefix_len`` its length and SGLang sets
  ``req.kv.cache_protected_len`` to it.
- admission ``lock(req.last_node)`` / ``unlock`` -> :meth:`inc_lock_ref` / :meth:`dec_lock_ref`:
  ``cache.lock(match)`` / ``cache.unlock(receipt)``.
- allocation reads the prefix's KV indices with :meth:`path_device_indices`.
- chunked prefill (``checkpoint_kv_cache``) and finish (``release_kv_cache(checkpoint=True)``)
  -> :meth:`checkpoint`: ``cache.adopt`` the request's row, rewrite the row with the tree's
  slots, move the lock forward. SGLang itself then frees the row's part past
  ``cache_protected_len`` (the unaligned tail) and unlocks.
- retraction and aborts (``release_kv_cache(checkpoint=False)``) only unlock here; SGLang
  frees the request's own slots.
- ``evict_for_alloc`` / ``evict`` -> ``cache.evict(full=n)``.

Negative control: with ``RADIXKV_SGLANG_NEGATIVE_CONTROL=1`` in the environment when the
cache is built, :meth:`path_device_indices` points every position of a reused prefix at the
prefix's first KV row. (Not a permutation: attention over a prefix is blind to the order of
its rows, whose keys carry their positions, so reversed indices would change nothing.) No
memory is written through them; a test proves with it that its output comparison would catch
a cache handing back wrong KV. With ``=load``, load-backs from the host tier or L3 write
wrong rows instead (see :mod:`.copy_engine`).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import numpy.typing as npt
from sglang.srt.mem_cache.base_prefix_cache import (  # type: ignore[import-not-found, unused-ignore]
    BasePrefixCache,
    DecLockRefResult,
    EvictParams,
    EvictResult,
    MatchPrefixParams,
    MatchResult,
)

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import StaleHandleError
from radixkv.integrations.restore import Restorer
from radixkv.integrations.sglang import NEGATIVE_CONTROL_ENV
from radixkv.integrations.sglang.allocator import SGLangSlotAllocator, to_numpy, to_torch
from radixkv.integrations.sglang.events import EventSink, make_sink
from radixkv.integrations.sglang.handles import Acquired, PrefixHandle, Release
from radixkv.integrations.sglang.keys import key_length, key_tokens, request_namespace, tokens_of
from radixkv.integrations.sglang.lower_tiers import build_tiers
from radixkv.integrations.sglang.settings import TierSettings
from radixkv.integrations.sglang.support import UnsupportedConfiguration

__all__ = ["RadixKVPrefixCache", "negative_control_mode"]


def negative_control_mode() -> str | None:
    """What ``RADIXKV_SGLANG_NEGATIVE_CONTROL`` asks to break (tests only): ``"indices"``
    (value ``1`` or ``indices``: reused prefixes read wrong KV indices), ``"load"``
    (load-backs from the host tier or L3 write the wrong rows), or ``None``."""
    value = os.environ.get(NEGATIVE_CONTROL_ENV, "")
    if value in ("", "0"):
        return None
    if value in ("1", "indices"):
        return "indices"
    if value == "load":
        return "load"
    raise UnsupportedConfiguration(f"{NEGATIVE_CONTROL_ENV}={value!r}: 1, indices or load")


class RadixKVPrefixCache(BasePrefixCache):  # type: ignore[misc, unused-ignore]
    """SGLang radix-cache backend ``radixkv``; build it with ``register.build(ctx)``."""

    def __init__(self, params: Any, *, policy: str = "lru", page_hash: str = "sha256",
                 tiers: TierSettings | None = None, model: str = "") -> None:
        if params.disable:
            raise UnsupportedConfiguration("radixkv: the radix cache is disabled")
        self.disable = False
        self.req_to_token_pool = params.req_to_token_pool
        self.token_to_kv_pool_allocator = params.token_to_kv_pool_allocator
        self.page_size = int(params.page_size)
        self.is_eagle = bool(params.is_eagle)
        self.slot_allocator = SGLangSlotAllocator(self.token_to_kv_pool_allocator)
        self.device = self.slot_allocator.device
        self.events: EventSink | None = make_sink(bool(params.enable_kv_cache_events),
                                                  params.kv_event_lora_names)
        negative = negative_control_mode()
        self.negative_control = negative == "indices"
        parts = None if tiers is None else build_tiers(
            tiers, self.token_to_kv_pool_allocator.get_kvcache(), self.page_size, model,
            page_hash, negative_control=negative == "load")
        config = CacheConfig(capacity=self.slot_allocator.capacity, page_size=self.page_size,
                             policy=policy, bigram=self.is_eagle,
                             events=self.events is not None, page_hash=page_hash,
                             host=None if parts is None else parts.host,
                             storage=None if parts is None else parts.storage)
        self.cache = PrefixCache(config, None if parts is None else parts.copy_engine,
                                 storage=None if parts is None else parts.store,
                                 allocators={"full": self.slot_allocator})
        self.restorer = None if parts is None else Restorer(self.cache, parts.storage is not None)
        """Brings host and L3 prefixes onto the device at match time; ``None`` without tiers."""
        if params.enable_metrics:
            self.init_metrics_collector()

    # ------------------------------------------------------------------ match and lock

    def match_prefix(self, params: MatchPrefixParams) -> MatchResult:
        tokens, namespace = key_tokens(params.key, self.is_eagle)
        handle = self._match(tokens, namespace, params.req, restore=True)
        return MatchResult(device_prefix_len=handle.length, last_device_node=handle,
                           last_host_node=handle, best_match_node=handle)

    def _match(self, tokens: npt.NDArray[np.int64], namespace: Any, request: Any = None,
               restore: bool = False) -> PrefixHandle:
        """The handle of ``tokens``' cached prefix; with ``restore``, after loading what the
        host tier and L3 hold of it onto the device (see :mod:`.lower_tiers`)."""
        if key_length(len(tokens), self.is_eagle) < self.page_size:
            return PrefixHandle.root(namespace)
        if restore and self.restorer is not None:
            found = self.restorer.restore(tokens, namespace, getattr(request, "rid", None))
        else:
            found = self.cache.match(tokens, namespace)
        if found.length == 0:
            return PrefixHandle.root(namespace)
        return PrefixHandle(found, tokens, namespace)

    def inc_lock_ref(self, node: PrefixHandle) -> Acquired:
        receipt = None if node.is_root else self._lock(node)
        node.receipts.append(receipt)
        return Acquired(radixkv_receipt=receipt)

    def dec_lock_ref(self, node: PrefixHandle, params: Any = None) -> DecLockRefResult:
        if isinstance(params, Release):
            receipt = params.radixkv_receipt
            node.receipts.remove(receipt)
        else:  # a caller without the receipt: the handle's latest lock
            receipt = node.receipts.pop()
        if receipt is not None:
            self.cache.unlock(receipt)
        return DecLockRefResult()

    def _lock(self, handle: PrefixHandle) -> Any:
        """Lock the handle's prefix; if its node went away since the match (an eviction
        between SGLang's match and lock), the prefix must still be cached with the same
        slots, else the request's prefix is gone and that is an error."""
        try:
            return self.cache.lock(handle.match)
        except StaleHandleError:
            extra = 1 if self.is_eagle else 0
            again = self.cache.match(handle.tokens[: handle.length + extra], handle.namespace)
            if again.length != handle.length or not np.array_equal(again.slots,
                                                                   handle.slots()):
                raise
            handle.match = again
            return self.cache.lock(again)

    def path_device_indices(self, node: PrefixHandle) -> Any:
        slots = node.slots()
        if self.negative_control and len(slots) > 1:
            slots = np.full_like(slots, slots[0])
        return to_torch(slots, self.device)

    def root_node_handle(self, extra_key: Any = None) -> PrefixHandle:
        return PrefixHandle.root((extra_key, None) if extra_key is not None else None)

    @property
    def root_node(self) -> PrefixHandle:
        return PrefixHandle.root()

    def is_root(self, node: Any) -> bool:
        return node is None or bool(getattr(node, "is_root", False))

    def dfs_weight_order(self, node_handles: Any) -> list[int]:
        """Requests sharing a longer cached prefix first (stable): radixkv exposes no
        subtree weights, so this approximates SGLang's DFS-weight order."""
        lengths = [getattr(handle, "length", 0) for handle in node_handles]
        return sorted(range(len(lengths)), key=lambda index: -lengths[index])

    # ------------------------------------------------------------------ insert

    def checkpoint(self, req: Any, *, up_to: int, **kwargs: Any) -> None:
        """Insert ``req``'s KV up to ``up_to`` (SGLang ``RadixCache.checkpoint``'s contract):
        the tree adopts the row's whole pages, frees the row's duplicates, the row is
        repointed at the tree's slots, ``cache_protected_len`` advances and the lock moves
        to the new prefix. Frees nothing past the last whole page (SGLang does)."""
        kv = req.kv
        tokens = tokens_of(req.full_untruncated_fill_ids, up_to)
        namespace = request_namespace(req)
        protected = int(kv.cache_protected_len)
        row = self.req_to_token_pool.req_to_token[kv.req_pool_idx, : len(tokens)]
        slots = to_numpy(row)
        if self.negative_control and protected:  # the row holds the wrong prefix
            slots[:protected] = self._tree_prefix(req, protected)
        held = self.cache.adopt(tokens, slots, namespace, borrowed=protected,
                                priority=int(getattr(req, "priority", None) or 0))
        kv.cache_inserted_len = max(int(kv.cache_inserted_len), held)
        handle = self._match(tokens[: held + (1 if self.is_eagle else 0)], namespace)
        if handle.length != held:
            raise RuntimeError(f"radixkv: adopted {held} tokens but matched {handle.length}")
        if held > protected:
            fresh = to_torch(handle.slots()[protected:held], row.device).to(row.dtype)
            self.req_to_token_pool.write((kv.req_pool_idx, slice(protected, held)), fresh)
        kv.cache_protected_len = held
        self.unlock(req.lock)
        req.lock = self.lock(handle)
        req.last_node = handle

    def _tree_prefix(self, req: Any, length: int) -> npt.NDArray[np.int64]:
        last = req.last_node
        if isinstance(last, PrefixHandle) and last.length >= length:
            return last.slots()[:length]
        raise RuntimeError("radixkv negative control: the request's prefix is unknown")

    # ------------------------------------------------------------------ eviction, sizes

    def evict(self, params: EvictParams) -> EvictResult:
        wanted = int(params.num_tokens)
        if wanted <= 0:
            return EvictResult()
        start = time.perf_counter()
        evicted = self.cache.evict(full=wanted)["full"]
        self.update_eviction_metrics(evicted, start)
        return EvictResult(num_tokens_evicted=evicted)

    def evictable_size(self) -> int:
        cached, protected = self.cache.sizes()
        return cached - protected

    def protected_size(self) -> int:
        return self.cache.sizes()[1]

    def full_evictable_size(self) -> int:
        return self.evictable_size()

    def full_protected_size(self) -> int:
        return self.protected_size()

    def total_size(self) -> int:
        return self.cache.sizes()[0]

    def supports_prefix_sharing(self) -> bool:
        return True

    # ------------------------------------------------------------------ housekeeping

    def reset(self) -> None:
        """Drop everything cached; radixkv gives every tree slot back to SGLang's
        allocator (SGLang's ``flush_cache`` clears the allocator right after)."""
        self.cache.reset()

    def take_events(self) -> list[Any]:
        if self.events is None:
            return []
        return self.events.drain(self.cache.take_events())

    def sanity_check(self) -> None:
        self.cache.check_invariants()

    def pretty_print(self) -> None:
        stats = self.cache.stats()
        full = stats.components["full"]
        print(f"radixkv: nodes={stats.nodes} cached={full.cached} evictable={full.evictable} "
              f"protected={full.protected} available={self.slot_allocator.available}")
        print(f"#tokens: {full.cached}")

    def flush_pending_backups(self) -> None:
        """After every batch: apply the host tier's acknowledged copies (backups land, L3
        puts go out) and end loads a wait gave up on."""
        if self.restorer is not None:
            self.cache.poll()
            self.restorer.settle()

    def release_host_resources(self) -> None:
        """Settle L3's writes and close its store; close the event publisher."""
        self.cache.close()
        if self.events is not None:
            self.events.close()
