"""Lost-hit accounting, step by step: every queried token is a hit, lost to the component
that cut it (FULL evicted, SWA tombstone, MAMBA without a state there), hidden by the
``max_match`` cap, or unseen (never held, or a partial page). After each step the ledger
must read exactly as stated, and add up to the tokens queried."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from radixkv import (
    CacheConfig,
    CacheStats,
    ChunkedLocal,
    FullAttention,
    Mamba,
    PrefixCache,
    SlidingWindow,
)

from ..audited import AuditedCache


def ledger(cache: Any) -> dict[str, int]:
    """hit / lost per component / capped / unseen since the cache was built."""
    stats: CacheStats = cache.stats()
    out = {"hit": stats.hit_tokens}
    out.update({kind: c.lost for kind, c in stats.components.items()})
    out.update(capped=stats.capped_tokens, unseen=stats.unseen_tokens)
    assert sum(out.values()) == stats.match_tokens
    return out


def seq(start: int, count: int) -> list[int]:
    return list(range(start, start + count))


def test_reasons_are_named_by_each_component() -> None:
    cache = PrefixCache(CacheConfig(capacity=64, components=(
        FullAttention(), SlidingWindow(window=4), ChunkedLocal(chunk=8), Mamba(track_interval=4))))
    reasons = {name: c.lost_reason for name, c in cache.stats().components.items()}
    assert reasons == {"full": "evicted", "swa": "tombstone", "chunked": "tombstone",
                       "mamba": "no_state"}


# ---------------------------------------------------------------- FULL

def test_full_never_seen_partial_page_and_the_max_match_cap() -> None:
    cache = AuditedCache(capacity=64, page_size=4)
    cache.finish(cache.admit(seq(0, 10)))  # 10 queried, nothing held yet; caches 8
    assert ledger(cache) == {"hit": 0, "full": 0, "capped": 0, "unseen": 10}
    assert cache.match(seq(0, 10)).length == 8  # the partial last page is unseen
    assert ledger(cache) == {"hit": 8, "full": 0, "capped": 0, "unseen": 12}
    assert cache.match(seq(0, 4) + [99] * 8).length == 4  # diverges after one page
    assert ledger(cache) == {"hit": 12, "full": 0, "capped": 0, "unseen": 20}
    lease = cache.admit(seq(0, 10), max_match=5)  # the cap keeps page 2 out of reach
    assert lease.cached_length == 4
    assert ledger(cache) == {"hit": 16, "full": 0, "capped": 4, "unseen": 22}
    cache.abort(lease)
    lease = cache.admit(seq(0, 9), max_match=8)  # a cap that cuts nothing held
    assert lease.cached_length == 8
    assert ledger(cache) == {"hit": 24, "full": 0, "capped": 4, "unseen": 23}
    cache.abort(lease)
    assert cache.match(seq(50, 8), ("lora", None)).length == 0  # an empty namespace
    assert ledger(cache) == {"hit": 24, "full": 0, "capped": 4, "unseen": 31}


def test_a_host_only_full_node_charges_full(monkeypatch: pytest.MonkeyPatch) -> None:
    # No tier moves FULL off the device yet; a node whose FULL value is gone is what a
    # demotion will leave, so build one by hand on a tree that allows it and match it.
    cache = PrefixCache(_config(capacity=64, page_size=4))
    cache.finish(cache.admit(seq(0, 8)))
    cache.finish(cache.admit(seq(0, 16)))
    tree = cache.tree
    (lower,) = [n for n in tree.nodes.values() if n.parent is not None and n.start == 8]
    monkeypatch.setattr(lower, "values", [None])
    monkeypatch.setattr(tree, "_whole_all", False)
    monkeypatch.setattr(tree, "holes", [1])
    assert cache.match(seq(0, 16)).length == 8
    assert cache.stats().components["full"].lost == 8


def _config(**options: Any) -> Any:
    from radixkv import CacheConfig
    return CacheConfig(**options)


# ---------------------------------------------------------------- SWA

def test_swa_tombstones_inside_the_window_are_charged_to_swa() -> None:
    cache = AuditedCache(capacity=32, page_size=1, components=("full", "swa"),
                         sliding_window=4)
    lease = cache.admit(seq(100, 10))
    cache.slide_window(lease)  # [0, 6) leave the window: cached as tombstones
    cache.finish(lease)
    assert ledger(cache) == {"hit": 0, "full": 0, "swa": 0, "capped": 0, "unseen": 10}
    assert cache.match(seq(100, 10)).length == 10  # the last 4 are live
    assert ledger(cache) == {"hit": 10, "full": 0, "swa": 0, "capped": 0, "unseen": 10}
    assert cache.match(seq(100, 6)).length == 0  # its window [2, 6) is all tombstone
    assert ledger(cache) == {"hit": 10, "full": 0, "swa": 6, "capped": 0, "unseen": 10}
    assert cache.match([*seq(100, 8), 7]).length == 0  # window [4, 8) starts in the tomb
    assert ledger(cache) == {"hit": 10, "full": 0, "swa": 14, "capped": 0, "unseen": 11}
    cache.evict(swa=4)  # the live leaf goes whole, and the tombstone, a leaf now, with it
    assert cache.match(seq(100, 10)).length == 0
    assert ledger(cache) == {"hit": 10, "full": 0, "swa": 14, "capped": 0, "unseen": 21}


def test_chunked_tombstones_inside_the_open_chunk_are_charged_to_chunked() -> None:
    cache = AuditedCache(capacity=32, page_size=1, components=(FullAttention(),
                                                               ChunkedLocal(chunk=4)))
    lease = cache.admit(seq(100, 10))
    cache.slide_window(lease)  # chunk [8, 12) is open: [0, 8) are cached as tombstones
    cache.finish(lease)
    assert ledger(cache) == {"hit": 0, "full": 0, "chunked": 0, "capped": 0, "unseen": 10}
    assert cache.match(seq(100, 10)).length == 10  # its chunk so far, [8, 10), is live
    assert cache.match(seq(100, 8)).length == 8  # a chunk boundary needs nothing
    assert ledger(cache) == {"hit": 18, "full": 0, "chunked": 0, "capped": 0, "unseen": 10}
    assert cache.match(seq(100, 7)).length == 4  # [4, 7) is tombstone: back to 4
    assert ledger(cache) == {"hit": 22, "full": 0, "chunked": 3, "capped": 0, "unseen": 10}
    assert cache.match(seq(100, 3)).length == 0  # [0, 3) is tombstone
    assert ledger(cache) == {"hit": 22, "full": 0, "chunked": 6, "capped": 0, "unseen": 10}


# ---------------------------------------------------------------- MAMBA

def mamba_cache() -> AuditedCache:
    return AuditedCache(capacity=64, page_size=1, components=("full", "mamba"),
                        mamba_track_interval=4, mamba_states=8)


def test_mamba_without_a_state_at_the_end_is_charged_to_mamba() -> None:
    cache = mamba_cache()
    lease = cache.admit(seq(0, 10))
    cache.checkpoint(lease, 4)
    cache.checkpoint(lease, 8)
    cache.finish(lease)  # cut at its last checkpoint: [0, 4) and [4, 8), a state at each end
    assert ledger(cache) == {"hit": 0, "full": 0, "mamba": 0, "capped": 0, "unseen": 10}
    assert cache.match(seq(0, 6)).length == 4  # no state at 6: back to the one at 4
    assert ledger(cache) == {"hit": 4, "full": 0, "mamba": 2, "capped": 0, "unseen": 10}
    assert cache.match(seq(0, 12)).length == 8  # the tree ends at 8 with a state
    assert ledger(cache) == {"hit": 12, "full": 0, "mamba": 2, "capped": 0, "unseen": 14}
    branch = cache.admit(seq(0, 4) + [77] * 4)  # a sibling: [0, 4) becomes internal
    cache.checkpoint(branch, 8)
    cache.finish(branch)
    assert ledger(cache) == {"hit": 16, "full": 0, "mamba": 2, "capped": 0, "unseen": 18}
    held = [cache.lock(cache.match(tokens).node) for tokens in (seq(0, 8), seq(0, 4) + [77] * 4)]
    assert ledger(cache) == {"hit": 32, "full": 0, "mamba": 2, "capped": 0, "unseen": 18}
    assert cache.evict(mamba=1) == {"full": 0, "mamba": 1}  # the inner state: a tombstone
    for receipt in held:
        cache.unlock(receipt)
    assert cache.match(seq(0, 4)).length == 0
    assert ledger(cache) == {"hit": 32, "full": 0, "mamba": 6, "capped": 0, "unseen": 18}
    assert cache.match(seq(0, 8)).length == 8  # the leaf's own state still serves
    assert ledger(cache) == {"hit": 40, "full": 0, "mamba": 6, "capped": 0, "unseen": 18}


def test_a_swa_cut_and_a_mamba_cut_in_one_match_are_each_charged_their_part() -> None:
    cache = AuditedCache(capacity=64, page_size=1, components=("full", "swa", "mamba"),
                         sliding_window=2, mamba_track_interval=2, mamba_states=16)
    lease = cache.admit(seq(0, 12))
    for position in (2, 4, 8):
        cache.checkpoint(lease, position)
    cache.slide_window(lease, 4)  # [0, 2) leaves the window: a tombstone
    cache.finish(lease)  # cut at the last checkpoint: [0, 2) [2, 4) [4, 8)
    assert ledger(cache) == {"hit": 0, "full": 0, "swa": 0, "mamba": 0, "capped": 0,
                             "unseen": 12}
    # structural 6 -> MAMBA: the state at 4 -> SWA: window [2, 4) is live: 4
    assert cache.match(seq(0, 6)).length == 4
    assert ledger(cache) == {"hit": 4, "full": 0, "swa": 0, "mamba": 2, "capped": 0,
                             "unseen": 12}
    # structural 3 -> SWA first (tree order): window [1, 3) touches the tombstone: 0, all
    # of it SWA's; MAMBA has nothing left to cut
    assert cache.match(seq(0, 3)).length == 0
    assert ledger(cache) == {"hit": 4, "full": 0, "swa": 3, "mamba": 2, "capped": 0,
                             "unseen": 12}


# ---------------------------------------------------------------- the identity, at random

@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["admit", "match", "evict"]),
                          st.lists(st.integers(0, 5), min_size=0, max_size=12),
                          st.integers(0, 12)), max_size=25))
def test_the_ledger_always_adds_up_to_the_tokens_queried(steps: list[Any]) -> None:
    cache = AuditedCache(capacity=48, page_size=2, components=("full", "swa"),
                         sliding_window=4)
    for op, tokens, amount in steps:
        if op == "admit":
            try:
                lease = cache.admit(tokens, max_match=amount)
            except MemoryError:
                continue
            cache.slide_window(lease)
            cache.finish(lease)
        elif op == "match":
            cache.match(tokens)
        else:
            cache.evict(full=amount, swa=amount)
        assert min(ledger(cache).values()) >= 0


def test_with_lost_hits_off_every_shortfall_reads_as_unseen() -> None:
    cache = AuditedCache(capacity=32, page_size=1, components=("full", "swa"),
                         sliding_window=4, lost_hits=False)
    lease = cache.admit(seq(100, 10))
    cache.slide_window(lease)
    cache.finish(lease)
    assert cache.match(seq(100, 6)).length == 0
    cache.abort(cache.admit(seq(100, 10), max_match=5))
    assert ledger(cache) == {"hit": 0, "full": 0, "swa": 0, "capped": 0, "unseen": 26}


@pytest.mark.parametrize("flag", [None, 1, "yes"])
def test_lost_hits_must_be_a_bool(flag: object) -> None:
    from radixkv.errors import ConfigError
    with pytest.raises(ConfigError):
        _config(capacity=8, lost_hits=flag)
