"""SGLang 0.5.23's UnifiedRadixCache behind the benchmark interface (spec §4–§5).

Each method is one of the spec's calls, made through SGLang's own API: ``match_prefix``
returns ``device_prefix_len`` and a node id (the matched slots come from
``path_device_indices``), ``dec_lock_ref`` replays the receipt of ``inc_lock_ref``, and the
end-of-request path is ``release_kv_cache(req, tree, checkpoint=True)``.
"""

from __future__ import annotations

import itertools
from array import array
from typing import Any

from ..adapters import BenchShape
from .sglang_build import SGLangParts, build


class SGLangCache:
    """One fresh SGLang cache (Python or Rust tree core) for one operation."""

    _rids = itertools.count()

    def __init__(self, shape: BenchShape, longest: int, backend: str) -> None:
        parts: SGLangParts = build(shape, longest, backend)
        self.parts = parts
        self.tree, self.allocator, self.rows = parts.tree, parts.allocator, parts.req_pool
        self.page = self.page_size = shape.page_size
        self.swa = shape.components == "full+swa"
        self.mamba = shape.components == "full+mamba"
        self.root = self.tree.root_node_handle()
        names = parts.api
        self.RadixKey = names["RadixKey"]
        self.MatchPrefixParams = names["MatchPrefixParams"]
        self.InsertParams = names["InsertParams"]
        self.EvictParams = names["EvictParams"]
        self.Req = names["Req"]
        self.finish = names["FINISH_LENGTH"]
        self.sampling = names["SamplingParams"](temperature=0, max_new_tokens=1)
        self.release_kv_cache = names["release_kv_cache"]

    # ---------------------------------------------------------------- allocation

    def alloc(self, n: int) -> Any:
        """``n`` KV slots or ``None``. Page 1: token-granular. Page > 1: whole pages (with
        SWA in both pools, recording the full→SWA mapping); the first ``n`` are returned."""
        if self.page == 1:
            return self.allocator.alloc(n)
        aligned = -(-n // self.page) * self.page
        if not self.swa:
            slots = self.allocator.alloc(aligned)
            return None if slots is None else slots[:n]
        full, swa = self.allocator.full_attn_allocator, self.allocator.swa_attn_allocator
        if aligned > full.available_size() or aligned > swa.available_size():
            return None
        full_slots, swa_slots = full.alloc(aligned), swa.alloc(aligned)
        self.allocator.full_to_swa_index_mapping[full_slots] = swa_slots
        return full_slots[:n]

    def _request(self, seq: list[int]) -> Any:
        """A request with a row in the request pool (and, with mamba, a state slot)."""
        req = self.Req(rid=f"bench-{next(self._rids)}", origin_input_text="",
                       origin_input_ids=array("q", seq), sampling_params=self.sampling)
        self.rows.alloc([req])
        return req

    def _state(self) -> Any:
        """One MAMBA state slot for an insert, straight from SGLang's state allocator (a
        request row per insert, never freed, ran the request pool dry after 5,100 inserts
        of the short-prompt workload); evicts states when none is free."""
        allocator = self.rows.mamba_allocator
        state = allocator.alloc(1)
        if state is None:
            self.tree.evict(self.EvictParams(num_tokens=0, mamba_num=1))
            state = allocator.alloc(1)
        if state is None:
            raise RuntimeError("SGLang's MAMBA state pool is full and nothing is evictable")
        return state

    def _insert(self, seq: list[int], slots: Any) -> None:
        params = self.InsertParams(key=self.RadixKey(array("q", seq)), value=slots)
        if self.mamba:
            params.mamba_value = self._state()
        self.tree.insert(params)
        tail = len(seq) - len(seq) % self.page
        if tail < len(seq):
            # SGLang's insert keeps only whole pages of the key and leaves the partial
            # last page with the caller (its end-of-request path frees it); radixkv's
            # insert returns it to the pool. Without this a page leaks per insert and
            # the cache states diverge (F 2978 instead of 3404 at page 16).
            self.allocator.free(slots[tail:])

    # ---------------------------------------------------------------- BenchCache

    def insert_with_fallback(self, seq: list[int]) -> bool:
        slots = self.alloc(len(seq))
        if slots is None:
            self.evict(2 * len(seq))
            slots = self.alloc(len(seq))
            if slots is None:
                return False
        self._insert(seq, slots)
        return True

    def fill(self, seq: list[int]) -> bool:
        slots = self.alloc(len(seq))
        if slots is None:
            return False
        self._insert(seq, slots)
        return True

    def match(self, seq: list[int]) -> tuple[int, Any]:
        found = self.tree.match_prefix(self.MatchPrefixParams(key=self.RadixKey(array("q", seq))))
        node = found.last_device_node
        return found.device_prefix_len, None if node == self.root else node

    def lock_unlock(self, node: Any) -> None:
        receipt = self.tree.inc_lock_ref(node)
        self.tree.dec_lock_ref(node, receipt.to_dec_params())

    def evict(self, num_tokens: int) -> None:
        self.tree.evict(self.EvictParams(num_tokens=num_tokens, mamba_num=2))

    def prepare_release(self, seq: list[int]) -> Any:
        """Admit ``seq`` as a finished request (spec §5.5 setup), or ``None`` when its slots
        cannot be had."""
        found = self.tree.match_prefix(self.MatchPrefixParams(key=self.RadixKey(array("q", seq))))
        matched, node = found.device_prefix_len, found.last_device_node
        lock = self.tree.lock(node)
        need = len(seq) - matched
        slots = self.alloc(need)
        if slots is None:
            self.evict(2 * need)
            slots = self.alloc(need)
            if slots is None:
                self.tree.unlock(lock)
                return None
        req = self._request(seq)
        req.full_untruncated_fill_ids = array("q", seq)
        req.extend_end = len(seq)
        req.prefix_len = matched
        req.last_node = node
        req.lock = lock
        kv = req.kv
        kv.cache_protected_len = matched
        kv.kv_committed_len = kv.kv_allocated_len = len(seq)
        if self.mamba:
            kv.mamba_last_track_seqlen = len(seq)
        req.finished_reason = self.finish(length=0)
        row = self.rows.req_to_token[kv.req_pool_idx]
        if matched:
            row[:matched] = self.tree.path_device_indices(node)[:matched]
        row[matched:len(seq)] = slots
        return req

    def release(self, request: Any) -> None:
        self.release_kv_cache(request, self.tree, checkpoint=True)

    def admit_finish(self, seq: list[int]) -> None:
        """A whole request (its prompt fully cached): the admission of
        :meth:`prepare_release` (match, lock, allocate the rest, a request row), then its
        release."""
        request = self.prepare_release(seq)
        if request is None:
            raise RuntimeError("admit_finish: no room for a cached prompt's request")
        self.release(request)

    def state(self) -> dict[str, int]:
        """FULL tokens the tree holds and free FULL slots (for comparing end states)."""
        tree = self.tree
        free = (self.allocator.full_available_size() if self.swa
                else self.allocator.available_size())
        return {"tree_tokens": int(tree.full_evictable_size() + tree.full_protected_size()),
                "free_slots": int(free)}

    def check(self) -> None:
        """SGLang's own tree invariants (``sanity_check``), then the pool accounting: slots
        held by the tree plus free slots never exceed the pool."""
        tree = self.tree
        tree.sanity_check()
        held = tree.full_evictable_size() + tree.full_protected_size()
        free = (self.allocator.full_available_size() if self.swa
                else self.allocator.available_size())
        if held + free > self.allocator.size_full:
            raise AssertionError(f"SGLang pool over-accounted: {held} held + {free} free")
