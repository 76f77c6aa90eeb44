"""The backend's host tier and L3 on SGLang's real KV pool and allocators, without a model:
KV rows written as a prefill would (each row a function of the prefix it ends), then evicted
to the host and restored, or written to L3 by one backend and restored by another with its
own pool; every restored row is checked against that oracle, SGLang's accounting after every
step, and a negative control (load-backs that write the wrong rows) must fail the check."""

from __future__ import annotations

import types
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .harness import ENGINE_SKIP_REASON

pytest.importorskip("sglang", reason=ENGINE_SKIP_REASON)
torch = pytest.importorskip("torch", reason=ENGINE_SKIP_REASON)

from sglang.srt.mem_cache.allocator.paged import PagedTokenToKVPoolAllocator  # noqa: E402
from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator  # noqa: E402
from sglang.srt.mem_cache.base_prefix_cache import EvictParams, MatchPrefixParams  # noqa: E402
from sglang.srt.mem_cache.cache_init_params import CacheInitParams  # noqa: E402
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool  # noqa: E402
from sglang.srt.mem_cache.radix_cache import RadixKey  # noqa: E402

from radixkv.integrations.sglang import NEGATIVE_CONTROL_ENV  # noqa: E402
from radixkv.integrations.sglang.backend import RadixKVPrefixCache  # noqa: E402
from radixkv.integrations.sglang.settings import TierSettings  # noqa: E402
from radixkv.integrations.sglang.support import (  # noqa: E402
    UnsupportedConfiguration,
    check_supported,
)

SIZE, HOST, HEADS, DIM, LAYERS = 64, 128, 2, 8, 2


def row_of(tokens: list[int], position: int) -> Any:
    """The oracle: the KV a prefill writes for ``position`` (per layer, key and value)."""
    rng = np.random.default_rng(hash(tuple(tokens[: position + 1])) % 2**32)
    return torch.from_numpy(rng.normal(size=(LAYERS, 2, HEADS, DIM)).astype(np.float32))


class Engine:
    """One backend over a real ``MHATokenToKVPool``, its allocator and a request table."""

    def __init__(self, page: int, settings: TierSettings) -> None:
        self.pool = MHATokenToKVPool(size=SIZE, page_size=page, dtype=torch.float32,
                                     head_num=HEADS, head_dim=DIM, layer_num=LAYERS,
                                     device="cpu", enable_memory_saver=False)
        if page == 1:
            self.allocator = TokenToKVPoolAllocator(SIZE, torch.float32, "cpu", self.pool,
                                                    False)
        else:
            self.allocator = PagedTokenToKVPoolAllocator(SIZE, page, torch.float32, "cpu",
                                                         self.pool, False)
            self.allocator.use_triton_kernels = False
        self.page = page
        self.rows = types.SimpleNamespace(req_to_token=torch.zeros((8, 128), dtype=torch.int32))
        self.rows.write = self.rows.req_to_token.__setitem__
        params = CacheInitParams(disable=False, req_to_token_pool=self.rows,
                                 token_to_kv_pool_allocator=self.allocator, page_size=page)
        self.cache = RadixKVPrefixCache(params, tiers=settings, model="tiny-llama@test")
        self.total = self.allocator.available_size()
        self.requests = 0

    def audit(self, outstanding: int = 0) -> None:
        self.cache.sanity_check()
        held = self.cache.evictable_size() + self.cache.protected_size()
        assert self.allocator.available_size() + held + outstanding == self.total

    def match(self, tokens: list[int]) -> Any:
        self.requests += 1
        request = types.SimpleNamespace(rid=f"r{self.requests}")
        key = RadixKey(array("q", tokens))
        return self.cache.match_prefix(MatchPrefixParams(key=key, req=request))

    def serve(self, tokens: list[int]) -> int:
        """Admit, prefill (write the oracle's rows) and finish one request; returns the
        reused length."""
        match = self.match(tokens)
        prefix = match.device_prefix_len
        req = types.SimpleNamespace(
            kv=types.SimpleNamespace(req_pool_idx=0, cache_protected_len=prefix,
                                     cache_inserted_len=0),
            full_untruncated_fill_ids=array("q", tokens), extra_key=None, cache_salt=None,
            priority=None, last_node=match.last_device_node)
        req.lock = self.cache.lock(req.last_node)
        fresh = -(-(len(tokens) - prefix) // self.page) * self.page
        new = self.allocator.alloc(fresh)
        assert new is not None
        reused = self.cache.path_device_indices(req.last_node)[:prefix]
        indices = torch.cat((reused, new[: len(tokens) - prefix]))
        for position in range(prefix, len(tokens)):
            self.write(int(indices[position]), row_of(tokens, position))
        self.rows.req_to_token[0, :len(tokens)] = indices.to(torch.int32)
        self.cache.checkpoint(req, up_to=len(tokens))
        tail = self.rows.req_to_token[0, req.kv.cache_protected_len: len(tokens)]
        if len(tail):
            self.allocator.free(tail.to(torch.int64))
        self.cache.unlock(req.lock)
        self.cache.flush_pending_backups()  # SGLang runs it after every batch
        self.audit()
        return prefix

    def write(self, slot: int, row: Any) -> None:
        for layer in range(LAYERS):
            self.pool.k_buffer[layer][slot] = row[layer, 0]
            self.pool.v_buffer[layer][slot] = row[layer, 1]

    def wrong_rows(self, tokens: list[int], length: int) -> list[int]:
        """Positions below ``length`` whose KV at the matched indices is not the oracle's."""
        match = self.match(tokens)
        assert match.device_prefix_len >= length
        indices = self.cache.path_device_indices(match.last_device_node)
        wrong = []
        for position in range(length):
            slot, row = int(indices[position]), row_of(tokens, position)
            if not all(torch.equal(self.pool.k_buffer[layer][slot], row[layer, 0])
                       and torch.equal(self.pool.v_buffer[layer][slot], row[layer, 1])
                       for layer in range(LAYERS)):
                wrong.append(position)
        return wrong

    def evict_all(self) -> None:
        self.cache.evict(EvictParams(num_tokens=SIZE))
        self.audit()
        assert self.cache.total_size() == 0


def host_only(policy: str) -> TierSettings:
    return TierSettings(host_tokens=HOST, write_policy=policy)


def with_l3(root: Path, page: int) -> TierSettings:
    return TierSettings(host_tokens=HOST, storage=f"file://{root}", prefetch_threshold=page,
                        wait_policy="wait_complete")


PROMPT = list(range(300, 330))


@pytest.mark.parametrize("policy", ["write_through", "write_back"])
@pytest.mark.parametrize("page", [1, 4])
def test_an_evicted_prefix_comes_back_from_the_host_with_its_rows(page: int,
                                                                  policy: str) -> None:
    engine = Engine(page, host_only(policy))
    engine.serve(PROMPT)
    engine.evict_all()
    whole = len(PROMPT) // page * page
    assert engine.match(PROMPT).device_prefix_len == whole
    engine.audit()
    assert engine.wrong_rows(PROMPT, whole) == []
    assert engine.cache.restorer is not None
    assert engine.cache.restorer.counters["restored_tokens"] == whole
    assert engine.serve([*PROMPT, 1, 2, 3, 4]) == whole  # the restored prefix is reused


@pytest.mark.parametrize("page", [1, 4])
def test_a_second_engine_restores_from_l3_what_the_first_wrote(page: int,
                                                               tmp_path: Path) -> None:
    first = Engine(page, with_l3(tmp_path, page))
    first.serve(PROMPT)
    first.cache.release_host_resources()  # settles the puts
    second = Engine(page, with_l3(tmp_path, page))
    whole = len(PROMPT) // page * page
    assert second.match(PROMPT).device_prefix_len == whole
    second.audit()
    assert second.wrong_rows(PROMPT, whole) == []
    stats = second.cache.cache.stats().storage
    assert stats is not None and stats.restored_tokens == whole and stats.faults == 0
    other = Engine(page, with_l3(tmp_path / "elsewhere", page))
    assert other.match(PROMPT).device_prefix_len == 0  # another store: nothing


@pytest.mark.parametrize("page", [1, 4])
def test_negative_control_restored_rows_that_are_wrong_are_seen(
        page: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = Engine(page, with_l3(tmp_path, page))
    first.serve(PROMPT)
    first.cache.release_host_resources()
    monkeypatch.setenv(NEGATIVE_CONTROL_ENV, "load")
    second = Engine(page, with_l3(tmp_path, page))
    whole = len(PROMPT) // page * page
    assert second.match(PROMPT).device_prefix_len == whole
    assert second.wrong_rows(PROMPT, whole) != []


def test_a_host_tier_is_refused_where_it_cannot_run() -> None:
    engine = Engine(4, TierSettings())
    settings = TierSettings(host_tokens=HOST)
    ctx = types.SimpleNamespace(
        disable_radix_cache=False, is_hybrid_swa=False, is_hybrid_ssm=False,
        enable_hierarchical_cache=False, tp_size=1,
        params=types.SimpleNamespace(token_to_kv_pool_allocator=engine.allocator,
                                     page_size=4, is_eagle=False))
    check_supported(ctx, settings)
    check_supported(ctx, TierSettings())
    ctx.tp_size = 2
    with pytest.raises(UnsupportedConfiguration, match="tensor parallelism with a host tier"):
        check_supported(ctx, settings)
    check_supported(ctx, TierSettings())  # no host tier: tensor parallelism is fine
    ctx.tp_size, ctx.params.is_eagle = 1, True
    with pytest.raises(UnsupportedConfiguration, match="EAGLE"):
        check_supported(ctx, settings)


@pytest.mark.parametrize("page", [1, 4])
def test_a_failed_load_back_is_a_miss_and_leaves_sglangs_accounting_exact(
        page: int, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(page, host_only("write_through"))
    engine.serve(PROMPT)
    engine.evict_all()
    copies = engine.cache.cache.host.engine  # type: ignore[union-attr]

    def broken(*args: Any) -> None:
        raise RuntimeError("device copy failed")

    monkeypatch.setattr(copies, "_to_device", broken)
    assert engine.match(PROMPT).device_prefix_len == 0  # not served: the copy failed
    engine.audit()
    assert engine.cache.restorer is not None
    assert engine.cache.restorer.counters["misses"] == 1
    monkeypatch.undo()
    whole = len(PROMPT) // page * page
    assert engine.match(PROMPT).device_prefix_len == whole  # the host copy is intact
    assert engine.wrong_rows(PROMPT, whole) == []
