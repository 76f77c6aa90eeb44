"""DecodeBatch against a plain per-request model: random joins, leaves, extensions and
steps (seeded), compared after every operation."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from radixkv.sim.batch import DecodeBatch
from radixkv.sim.jobs import Job
from radixkv.sim.records import RequestRecord

from .support import request, tokens


def job(rid: int, prompt: int, output: int) -> Job:
    spec = request(rid, 0.0, tokens(0, prompt), output=output)
    return Job(spec, RequestRecord(rid, 0.0, prompt, output), [], 4, 0)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 100_000))
def test_the_batch_tracks_every_member_like_a_plain_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    batch, fed, jobs = DecodeBatch(), dict[Job, int](), []
    for step in range(60):
        if rng.random() < 0.3 or not fed:
            new = job(step, int(rng.integers(1, 50)), int(rng.integers(2, 12)))
            new.extended = 0
            batch.add(new)
            fed[new] = 0
            jobs.append(new)
        if fed and rng.random() < 0.1:
            gone = list(fed)[int(rng.integers(0, len(fed)))]
            batch.remove(gone)
            del fed[gone]
        if not fed:
            continue
        left = min(j.output_len - 1 - f for j, f in fed.items())
        assert batch.steps_to_next_finish() == left
        steps = int(rng.integers(1, left + 1))
        due = set(batch.due(steps))
        assert due == {j for j, f in fed.items() if f + steps > j.extended}
        for member in due:
            batch.sync(member)
            member.extended = min(member.output_len - 1, fed[member] + steps + 3)
            batch.schedule_extension(member)
        assert batch.context_sum() == sum(j.prompt_len + 1 + f for j, f in fed.items())
        finished = set(batch.advance(steps))
        for member in list(fed):
            fed[member] += steps
        assert finished == {j for j, f in fed.items() if f == j.output_len - 1}
        for member in finished:
            assert member.fed == member.output_len - 1
            del fed[member]
        assert set(batch.members) == set(fed)
