"""Hybrid caches (FULL+SWA, FULL+MAMBA) under the simulator."""

from __future__ import annotations

import numpy as np

from radixkv.sim.report import summarize
from radixkv.sim.workloads import make_workload

from .support import hits, request, run, tokens

HYBRID = {
    "full+swa": {"components": ("full", "swa"), "sliding_window": 8},
    "full+mamba": {"components": ("full", "mamba"), "mamba_track_interval": 8,
                   "mamba_states": 64},
}


def test_mamba_hits_only_where_a_state_was_saved() -> None:
    # hints put states at the prompt's last page boundary (16) of r0; r1 = A + 8 more
    # reuses those 16 tokens, copying that state
    prompt = tokens(0, 18)
    workload = [request(0, 0.0, prompt), request(1, 10.0, np.concatenate((prompt, tokens(50, 8))))]
    with_hints = run(workload, cache=HYBRID["full+mamba"])
    assert hits(with_hints) == [0, 16]
    assert with_hints.engines[0].cache.stats().checkpoints_used == 1


def test_without_hints_a_branch_point_between_intervals_is_lost() -> None:
    # r0 and r1 share 12 tokens, then branch. r2 shares r1's 12 too. With hints, r1 saves
    # a state at the branch point 12 and r2 reuses 12; without hints the nearest state is
    # at 8. The tokens between are FULL-resident: lost to the missing MAMBA state.
    shared = tokens(0, 12)
    workload = [request(i, 10.0 * i, np.concatenate((shared, tokens(100 * (i + 1), 8))))
                for i in range(3)]
    hinted = run(workload, cache=HYBRID["full+mamba"], events=True)
    plain = run(workload, cache=HYBRID["full+mamba"], events=True, hints=False)
    assert hits(hinted) == [0, 8, 12]
    assert hits(plain) == [0, 8, 8]
    assert [r.losses["swa_mamba_missing"] for r in plain.records] == [0, 4, 4]
    # FULL alone held 12 + 12 of the 60 prompt tokens; MAMBA let 8 + 8 through
    rates = summarize(plain)["hit_rate_by_component"]
    assert rates == {"full": 24 / 60, "mamba": 16 / 60}


def test_hybrid_caches_never_beat_full_only_on_the_same_chats() -> None:
    chats = make_workload("chat", sessions=6, turns=3, system_len=32, user_len=24,
                          output_len=8, rate=2.0, seed=3)
    full = sum(hits(run(chats, capacity=1024)))
    for extra in HYBRID.values():
        hybrid = run(chats, capacity=1024, events=True, cache=extra)
        assert 0 < sum(hits(hybrid)) <= full
        assert all(sum(r.losses.values()) == r.prompt_len for r in hybrid.records)
