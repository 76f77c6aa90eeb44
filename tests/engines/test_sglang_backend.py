"""radixkv's SGLang backend on SGLang's real KV allocators, without a model: the request
flow SGLang 0.5.23's scheduler drives (match, lock, checkpoint, release of the row's tail,
unlock, evict, reset) at page sizes 1 and 4, with the backend's audit and SGLang's own
accounting (free + evictable + protected = the pool) after every step; namespaces kept
apart; unsupported configurations refused at construction."""

from __future__ import annotations

import types
from array import array
from typing import Any

import pytest

from .harness import ENGINE_SKIP_REASON

pytest.importorskip("sglang", reason=ENGINE_SKIP_REASON)
torch = pytest.importorskip("torch", reason=ENGINE_SKIP_REASON)

from sglang.srt.mem_cache.allocator.paged import PagedTokenToKVPoolAllocator  # noqa: E402
from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator  # noqa: E402
from sglang.srt.mem_cache.base_prefix_cache import EvictParams, MatchPrefixParams  # noqa: E402
from sglang.srt.mem_cache.cache_init_params import CacheInitParams  # noqa: E402
from sglang.srt.mem_cache.radix_cache import RadixKey  # noqa: E402

from radixkv.integrations.sglang.backend import RadixKVPrefixCache  # noqa: E402
from radixkv.integrations.sglang.support import (  # noqa: E402
    UnsupportedConfiguration,
    check_supported,
)

SIZE = 64


class Flow:
    """One backend over a real SGLang allocator and a request-to-token table."""

    def __init__(self, page: int) -> None:
        if page == 1:
            self.allocator = TokenToKVPoolAllocator(SIZE, torch.float16, "cpu", None, False)
        else:
            self.allocator = PagedTokenToKVPoolAllocator(SIZE, page, torch.float16, "cpu",
                                                         None, False)
            self.allocator.use_triton_kernels = False
        self.page = page
        self.rows = types.SimpleNamespace(req_to_token=torch.zeros((8, 128),
                                                                   dtype=torch.int32))
        self.rows.write = self.rows.req_to_token.__setitem__
        params = CacheInitParams(disable=False, req_to_token_pool=self.rows,
                                 token_to_kv_pool_allocator=self.allocator, page_size=page)
        self.cache = RadixKVPrefixCache(params)
        self.total = self.allocator.available_size()

    def audit(self) -> None:
        self.cache.sanity_check()
        held = self.cache.evictable_size() + self.cache.protected_size()
        assert self.allocator.available_size() + held + self.outstanding == self.total

    outstanding = 0  # slots running requests hold outside the tree

    def serve(self, tokens: list[int], row: int, extra_key: Any = None) -> Any:
        """Admit, compute (allocate the rest) and finish one request as SGLang does."""
        key = RadixKey(array("q", tokens), extra_key=extra_key)
        match = self.cache.match_prefix(MatchPrefixParams(key=key))
        prefix = match.device_prefix_len
        req = types.SimpleNamespace(
            kv=types.SimpleNamespace(req_pool_idx=row, cache_protected_len=prefix,
                                     cache_inserted_len=0),
            full_untruncated_fill_ids=array("q", tokens), extra_key=extra_key,
            cache_salt=None, priority=None, last_node=match.last_device_node)
        req.lock = self.cache.lock(req.last_node)
        self.audit()
        fresh = -(-(len(tokens) - prefix) // self.page) * self.page
        new = self.allocator.alloc(fresh)
        assert new is not None
        self.outstanding = fresh
        reused = self.cache.path_device_indices(req.last_node)[:prefix]
        self.rows.req_to_token[row, :len(tokens)] = torch.cat(
            (reused.to(torch.int32), new[: len(tokens) - prefix].to(torch.int32)))
        self.audit()
        self.cache.checkpoint(req, up_to=len(tokens))
        tail = self.rows.req_to_token[row, req.kv.cache_protected_len: len(tokens)]
        if len(tail):
            self.allocator.free(tail.to(torch.int64))
        self.outstanding = 0
        self.cache.unlock(req.lock)
        self.audit()
        return req


@pytest.mark.parametrize("page", [1, 4])
def test_the_request_flow_keeps_sglangs_accounting_exact(page: int) -> None:
    flow = Flow(page)
    flow.serve(list(range(100, 110)), row=0)
    second = flow.serve([*range(100, 110), 7, 8, 9], row=1)
    assert second.kv.cache_protected_len == (13 // page) * page
    both = RadixKey(array("q", [*range(100, 110), 7, 8, 9]))
    match = flow.cache.match_prefix(MatchPrefixParams(key=both))
    assert match.device_prefix_len == (13 // page) * page
    assert flow.cache.evict(EvictParams(num_tokens=SIZE)).num_tokens_evicted == (
        (13 // page) * page)
    flow.audit()
    assert flow.allocator.available_size() == flow.total
    flow.serve(list(range(200, 230)), row=2)
    flow.cache.reset()
    flow.audit()


@pytest.mark.parametrize("page", [1, 4])
def test_extra_keys_never_share_a_prefix(page: int) -> None:
    flow = Flow(page)
    flow.serve(list(range(100, 116)), row=0, extra_key="lora-a")
    other = RadixKey(array("q", range(100, 116)), extra_key="lora-b")
    assert flow.cache.match_prefix(MatchPrefixParams(key=other)).device_prefix_len == 0
    same = RadixKey(array("q", range(100, 116)), extra_key="lora-a")
    assert flow.cache.match_prefix(MatchPrefixParams(key=same)).device_prefix_len == 16


def _context(**overrides: Any) -> Any:
    flow = Flow(1)
    params = types.SimpleNamespace(token_to_kv_pool_allocator=flow.allocator, page_size=1)
    context = dict(disable_radix_cache=False, is_hybrid_swa=False, is_hybrid_ssm=False,
                   enable_hierarchical_cache=False, params=params)
    context.update(overrides)
    return types.SimpleNamespace(**context)


@pytest.mark.parametrize("flag, words", [
    ("is_hybrid_swa", "sliding-window"), ("is_hybrid_ssm", "Mamba"),
    ("enable_hierarchical_cache", "HiCache"),
])
def test_unsupported_configurations_are_refused_at_construction(flag: str, words: str) -> None:
    check_supported(_context())  # the supported one passes
    with pytest.raises(UnsupportedConfiguration, match=words):
        check_supported(_context(**{flag: True}))
