"""(c) The real router: NVIDIA Dynamo's standalone KV indexer (``ai-dynamo-runtime`` 1.6.1)
subscribes to the publisher, and its overlap scores must follow the cache through inserts,
evictions, resets, a lost batch (recovered by replay) and a republish; with a host tier, its
per-tier overlap must follow backups (medium ``CPU``), demotion, host eviction, a failed
backup and a load-back.

The indexer runs as ``python -m dynamo.indexer --port P --threads 1``; workers are added with
``POST /register {"instance_id", "endpoint", "model_name", "block_size", "replay_endpoint"}``
and ``POST /query {"token_ids", "model_name", "lora_name"?}`` answers
``{"scores": {"<instance>": {"<dp_rank>": matched_tokens}}, "instances": {"<instance>":
{"gpu": g, "cpu": c, "disk": d, ...}}}``: ``gpu`` is the device overlap, ``cpu`` and ``disk``
count cumulatively (the device overlap extended by host pages, then by disk pages).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from .support import require_dynamo_indexer

zmq = require_dynamo_indexer()

from radixkv import CacheConfig, PrefixCache  # noqa: E402
from radixkv.events import KVEventPublisher  # noqa: E402
from radixkv.host import HostTier, NumpyCopyEngine  # noqa: E402

from .dynamo_indexer import Indexer  # noqa: E402
from .support import LOOPBACK, FailingSends, insert, make_cache, wait_for  # noqa: E402

PAGE = 4


def expected_scores(cache: PrefixCache, instance: int, probes: list[Any]) -> list[dict[int, int]]:
    """What the router should answer: the cache's own match length for each probe."""
    out = []
    for tokens, lora in probes:
        length = cache.match(tokens, None if lora is None else (lora, None)).length
        out.append({instance: length} if length else {})
    return out


def assert_follows(indexer: Indexer, cache: PrefixCache, model: str, instance: int,
                   probes: list[Any], timeout: float = 10.0) -> None:
    expected = expected_scores(cache, instance, probes)
    seen = wait_for(lambda: [indexer.scores(t, model, lora) for t, lora in probes],
                    lambda got: got == expected, timeout=timeout)
    assert seen == expected, indexer.log()[-3000:]


def publisher(**options: Any) -> KVEventPublisher:
    return KVEventPublisher(endpoint=LOOPBACK, bind=True, replay_endpoint=LOOPBACK, **options)


A = list(range(0, 16))
B = list(range(0, 8)) + list(range(40, 48))
C = list(range(100, 112))
BIG = list(range(500, 548))


def test_scores_follow_inserts_evictions_and_reset(indexer: Indexer) -> None:
    model, instance = "lifecycle", 11
    cache = make_cache(page_size=PAGE, capacity=64)
    probes = [(A, None), (B, None), (C, None), (A[:8] + [7] * 8, None), (BIG, None),
              (A, "lora-x"), (C, "lora-x")]
    with publisher(topic=f"kv@{instance}@{model}") as pub:
        indexer.register(instance, model, pub, PAGE)
        time.sleep(0.3)  # the indexer's SUB connects asynchronously
        insert(cache, A)
        insert(cache, B)
        pub.publish(cache)
        insert(cache, C)
        insert(cache, A[:8], ("lora-x", None))  # an adapter's pages: lora_name on the wire
        pub.publish(cache)
        assert_follows(indexer, cache, model, instance, probes)
        assert indexer.scores(A, model, "lora-x") == {instance: 8}

        cache.evict(full=8)  # the least recent leaves go
        pub.publish(cache)
        assert_follows(indexer, cache, model, instance, probes)

        insert(cache, BIG)  # 48 tokens into 64 slots: admission evicts
        pub.publish(cache)
        assert_follows(indexer, cache, model, instance, probes)
        assert indexer.scores(BIG, model) == {instance: 48}

        cache.reset()
        pub.publish(cache)
        assert_follows(indexer, cache, model, instance, probes)
        assert all(indexer.scores(t, model, lora) == {} for t, lora in probes)

        insert(cache, A)
        pub.publish(cache)
        assert_follows(indexer, cache, model, instance, probes)
        assert pub.stats()["send_errors"] == 0
    assert indexer.post("/unregister", {"instance_id": instance, "model_name": model})[0] == 200


def test_a_lost_batch_makes_the_indexer_replay_and_converge(
    indexer: Indexer, caplog: pytest.LogCaptureFixture,
) -> None:
    model, instance = "gap", 12
    cache = make_cache(page_size=PAGE, capacity=128)
    probes = [(A, None), (B, None), (C, None), (BIG, None)]
    with publisher(heartbeat_interval=None) as pub:  # no heartbeat may reveal the gap early
        indexer.register(instance, model, pub, PAGE)
        time.sleep(0.3)
        insert(cache, A)
        pub.publish(cache)
        assert_follows(indexer, cache, model, instance, probes)

        assert pub.flush(10)
        pub._sender.socket = FailingSends(pub._sender.socket, failures=1)
        insert(cache, C)
        with caplog.at_level(logging.WARNING, logger="radixkv.events"):
            (lost,) = pub.publish(cache)  # the cache goes on; the batch stays in replay
            assert pub.flush(10)
        assert pub.stats()["send_errors"] == 1
        assert len([r for r in caplog.records if r.name == "radixkv.events"]) == 1
        assert indexer.scores(C, model) == {}  # the indexer missed it, and cannot know yet

        insert(cache, B)
        insert(cache, BIG)
        (after,) = pub.publish(cache)
        assert after == lost + 1
        assert_follows(indexer, cache, model, instance, probes)
        assert f"expected seq {lost}, got {after}" in indexer.log()
        # a replayed batch applied twice would leave a page behind after this
        cache.evict(full=cache.stats().components["full"].cached)
        pub.publish(cache)
        assert_follows(indexer, cache, model, instance, probes)
        assert all(indexer.scores(t, model) == {} for t, _ in probes)
        assert pub.stats()["replay_requests"] >= 2  # start-up and the gap


def test_a_router_that_lost_state_converges_after_republish_all(indexer: Indexer) -> None:
    model, instance = "republish", 13
    cache = make_cache(page_size=PAGE, capacity=128)
    probes = [(A, None), (B, None), (C, None), (A, "lora-y"), (BIG, None)]
    with publisher(buffer_steps=2, republish_chunk=2) as pub:
        for tokens, namespace in [(A, None), (B, None), (C, None), (A, ("lora-y", None))]:
            insert(cache, tokens, namespace)
            pub.publish(cache)
        # the router joins late: batches 0..3 are gone from the replay buffer too
        indexer.register(instance, model, pub, PAGE)
        time.sleep(0.3)
        insert(cache, BIG)
        pub.publish(cache)  # the router sees a gap from 0 and gets batches 4..5 only
        marker = "reason=started_after_requested worker_id=13"
        log = wait_for(indexer.log, lambda text: marker in text)
        assert "Replay incomplete" in log
        assert indexer.scores(BIG, model) == {instance: 48}
        assert indexer.scores(A, model, "lora-y") == {instance: 16}  # batch 4 was replayed
        assert indexer.scores(A, model) == {}  # batch 1 was lost for good

        pub.republish_all(cache)  # AllBlocksCleared, then every resident page
        assert_follows(indexer, cache, model, instance, probes)
        assert indexer.scores(A, model) == {instance: 16}


def test_media_and_the_legacy_signed_form_are_understood(indexer: Indexer) -> None:
    model = "media"
    forms = {  # instance: publisher options
        21: {"medium_gpu": "CPU"},  # the host tier
        22: {"legacy_arrays": True, "signed_hashes": True},
        23: {"medium_gpu": "STORAGE"},  # the disk tier
    }
    caches = {instance: make_cache(page_size=PAGE) for instance in forms}
    pubs = {instance: publisher(**options) for instance, options in forms.items()}
    try:
        for instance, pub in pubs.items():
            indexer.register(instance, model, pub, PAGE)
        time.sleep(0.3)
        for instance, pub in pubs.items():
            insert(caches[instance], A)
            insert(caches[instance], B)
            pub.publish(caches[instance])

        def tiers() -> dict[str, Any]:
            status, reply = indexer.post("/query", {"token_ids": A, "model_name": model})
            assert status == 200, reply
            return {key: {k: reply["instances"].get(key, {}).get(k)
                          for k in ("gpu", "cpu", "disk")} for key in ("21", "22", "23")}

        expected = {"21": {"gpu": 0, "cpu": 16, "disk": 16},  # tiers count cumulatively
                    "22": {"gpu": 16, "cpu": 16, "disk": 16},
                    "23": {"gpu": 0, "cpu": 0, "disk": 16}}
        assert wait_for(tiers, lambda got: got == expected) == expected
        assert indexer.scores(A, model) == {22: 16}  # scores count the device tier

        for instance, pub in pubs.items():  # removals name the same hashes and medium
            cache = caches[instance]
            cache.evict(full=cache.stats().components["full"].cached)
            pub.publish(cache)
        gone = {key: {"gpu": None, "cpu": None, "disk": None} for key in expected}
        assert wait_for(tiers, lambda got: got == gone) == gone
    finally:
        for pub in pubs.values():
            pub.close()


def tier_overlap(cache: PrefixCache, probes: list[list[int]]) -> list[dict[str, int | None]]:
    """What the indexer's per-tier overlap should be: ``gpu`` the device match, ``cpu`` and
    ``disk`` cumulative (the device match extended by host pages: the merged match)."""
    out: list[dict[str, int | None]] = []
    for tokens in probes:
        match = cache.match(tokens)
        device, merged = match.length, match.length + match.host_length
        out.append({"gpu": device, "cpu": merged, "disk": merged} if merged else
                   {"gpu": None, "cpu": None, "disk": None})
    return out


def test_per_tier_overlap_follows_backups_demotion_host_eviction_and_load_back(
    indexer: Indexer,
) -> None:
    model, instance = "host-tier", 24
    engine = NumpyCopyEngine()  # a batch completes at the next poll
    cache = PrefixCache(CacheConfig(capacity=40, page_size=PAGE, events=True,
                                    host=HostTier(capacity=32)), engine)
    probes = [A, B, C, BIG[:4]]

    def seen() -> list[dict[str, int | None]]:
        out = []
        for tokens in probes:
            status, reply = indexer.post("/query", {"token_ids": tokens, "model_name": model})
            assert status == 200, reply
            tiers = reply["instances"].get(str(instance), {})
            out.append({k: tiers.get(k) for k in ("gpu", "cpu", "disk")})
        return out

    def follows(expected: list[dict[str, int | None]]) -> None:
        assert expected == tier_overlap(cache, probes)
        got = wait_for(seen, lambda got: got == expected)
        assert got == expected, indexer.log()[-3000:]
        cache.check_invariants()

    with publisher(topic=f"kv@{instance}@{model}") as pub:
        indexer.register(instance, model, pub, PAGE)
        time.sleep(0.3)
        insert(cache, A)
        insert(cache, B)  # write_through: both backed up, the copies in flight
        pub.publish(cache)
        follows([{"gpu": 16, "cpu": 16, "disk": 16}] * 2 + [{"gpu": None, "cpu": None,
                                                           "disk": None}] * 2)
        cache.poll()  # acknowledged: BlockStored CPU
        pub.publish(cache)
        assert cache.stats().host.components["full"].cached == 24
        cache.evict(full=8)  # A's own half goes from the device, demoted: host-only
        pub.publish(cache)
        follows([{"gpu": 8, "cpu": 16, "disk": 16}, {"gpu": 16, "cpu": 16, "disk": 16}]
                + [{"gpu": None, "cpu": None, "disk": None}] * 2)
        assert indexer.scores(A, model) == {instance: 8}  # scores count the device only

        insert(cache, C)  # its backup needs 12 host slots of 8 free: A's host-only half goes
        cache.poll()
        pub.publish(cache)
        assert cache.stats().host.components["full"].evicted["budget"] == 8
        follows([{"gpu": 8, "cpu": 8, "disk": 8}, {"gpu": 16, "cpu": 16, "disk": 16},
                 {"gpu": 12, "cpu": 12, "disk": 12}, {"gpu": None, "cpu": None, "disk": None}])

        insert(cache, BIG[:4])  # fits in the host's last 4 slots
        (ticket,) = cache.host.records
        engine.fail(ticket)
        cache.poll()  # the backup failed: nothing is announced on the host
        pub.publish(cache)
        assert cache.stats().host.failed_backups == 1
        follows([{"gpu": 8, "cpu": 8, "disk": 8}, {"gpu": 16, "cpu": 16, "disk": 16},
                 {"gpu": 12, "cpu": 12, "disk": 12}, {"gpu": 4, "cpu": 4, "disk": 4}])
        cache.evict(full=cache.stats().components["full"].cached)  # the device empties:
        pub.publish(cache)  # A, B, C are demoted, D (its backup failed) is gone
        follows([{"gpu": 0, "cpu": 8, "disk": 8}, {"gpu": 0, "cpu": 16, "disk": 16},
                 {"gpu": 0, "cpu": 12, "disk": 12}, {"gpu": None, "cpu": None, "disk": None}])

        lease = cache.admit([*B, 1], load_back=True)  # B revives on the device from the host
        pub.publish(cache)
        follows([{"gpu": 8, "cpu": 8, "disk": 8}, {"gpu": 16, "cpu": 16, "disk": 16},
                 {"gpu": 0, "cpu": 12, "disk": 12}, {"gpu": None, "cpu": None, "disk": None}])
        cache.wait(lease)
        cache.finish(lease)
        pub.republish_all(cache)  # the snapshot: device pages on GPU, host pages on CPU
        assert tier_overlap(cache, probes)[1] == {"gpu": 16, "cpu": 16, "disk": 16}
        follows(tier_overlap(cache, probes))
        assert pub.stats()["send_errors"] == 0
