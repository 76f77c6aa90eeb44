"""Stateful (hypothesis) test of PrefixCache for every built-in component combination.

One machine per combination — FULL, FULL+SWA, FULL+MAMBA and FULL+SWA+MAMBA — at page sizes
1 and 4 (eight machines): the conformance kit's machine (:mod:`radixkv.testing`: tiny pools,
a four-token vocabulary, two namespaces, the whole request life-cycle, the caller-held path,
match, evict by name, locks and reset, audited after every step against the reference model
of DESIGN.md §3), with the parameters varied across machines (windows of 3 and 5 tokens, an
SWA pool smaller than FULL's, track intervals of one and two pages, few states) and MAMBA's
checkpoint hints checked against their own rule rather than against the component's hook:
every track interval past the match, the branch point, and the prompt's last page boundary.
"""

from __future__ import annotations

from hypothesis import settings

from radixkv import CacheConfig, ComponentSpec, FullAttention, Mamba, PrefixCache, SlidingWindow
from radixkv.cache import Lease
from radixkv.testing.audit import Audited
from radixkv.testing.machine import Plan

from ..cache.invalid_calls import InvalidCalls


class HybridMachine(InvalidCalls, Audited):
    """The kit's machine with the MAMBA hint rule written out, and refused calls of every
    class of the hardening issue mixed into its traffic (:class:`InvalidCalls`)."""

    def subject(self) -> PrefixCache:
        return self.c

    def live_leases(self) -> list[Lease]:
        return list(self.leases)

    def hints(self, length: int, branch: int, num_tokens: int) -> tuple[int, ...]:
        spec = self.PLAN.specs[-1]
        assert isinstance(spec, Mamba)
        interval, page = spec.track_interval, self.page
        end = num_tokens - num_tokens % page
        hints = set(range(length - length % interval + interval, end + 1, interval))
        if length < branch < end:
            hints.add(branch)
        if end > length:
            hints.add(end)
        return tuple(sorted(hints))


def _specs(combo: str, page: int) -> tuple[ComponentSpec, ...]:
    """The specs of one machine: the parameters differ between the page sizes."""
    window = SlidingWindow(window=3 if page == 1 else 5, capacity=16 if page == 1 else 32)
    mamba = Mamba(track_interval=page * (1 if page == 1 else 2), states=5)
    extra = {"Full": (), "FullSwa": (window,), "FullMamba": (mamba,),
             "FullSwaMamba": (window, mamba)}[combo]
    return (FullAttention(), *extra)


SETTINGS = settings(derandomize=True, deadline=None, max_examples=40, stateful_step_count=30,
                    database=None)

MACHINES: dict[str, type[HybridMachine]] = {}
for _combo in ("Full", "FullSwa", "FullMamba", "FullSwaMamba"):
    for _page in (1, 4):
        _name = f"{_combo}Page{_page}"
        _machine = type(f"{_name}Machine", (HybridMachine,),
                        {"PLAN": Plan(_specs(_combo, _page), _page)})
        _machine.TestCase.settings = SETTINGS
        MACHINES[_name] = _machine

TestFullPage1 = MACHINES["FullPage1"].TestCase
TestFullPage4 = MACHINES["FullPage4"].TestCase
TestFullSwaPage1 = MACHINES["FullSwaPage1"].TestCase
TestFullSwaPage4 = MACHINES["FullSwaPage4"].TestCase
TestFullMambaPage1 = MACHINES["FullMambaPage1"].TestCase
TestFullMambaPage4 = MACHINES["FullMambaPage4"].TestCase
TestFullSwaMambaPage1 = MACHINES["FullSwaMambaPage1"].TestCase
TestFullSwaMambaPage4 = MACHINES["FullSwaMambaPage4"].TestCase


# ---------------------------------------------------------------------- found by the machines


def test_a_finish_cut_at_a_checkpoint_before_the_live_window_caches_no_tombstoned_leaf() -> None:
    """FULL+SWA+MAMBA: the request saved a state at 2 only, then its window slid to [4, 6).
    MAMBA cuts the insert at 2, where every token already left the window: a leaf [0, 2)
    without SWA no match can end in (the tail rule of the SWA component), so nothing is
    cached and every slot goes back."""
    cache = PrefixCache(CacheConfig(capacity=16, components=("full", "swa", "mamba"),
                                    sliding_window=2, mamba_track_interval=1, mamba_states=8))
    lease = cache.admit([10, 11, 12, 13, 14, 15])
    cache.checkpoint(lease, 2)
    assert cache.slide_window(lease) == 4
    assert cache.finish(lease) == 0
    cache.check_invariants()
    assert len(cache.tree.nodes) - len(cache.tree.roots) == 0
    assert all(pool.available == pool.capacity for pool in cache.pools.pools)
