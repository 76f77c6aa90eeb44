"""(c, continued) The real router (NVIDIA Dynamo's KV indexer 1.6.1) against the namespace
fields, heartbeats and the resync after a drop: namespaces that differ only by
``cache_salt`` or an integer ``extra_key`` stay apart, a lost last batch is noticed without
any further traffic, and an overflowed event queue ends in a converged router."""

from __future__ import annotations

import random
import time
from typing import Any

from .support import require_dynamo_indexer

zmq = require_dynamo_indexer()

from radixkv import PrefixCache  # noqa: E402
from radixkv.events import BatchEncoder, KVEventPublisher, PublisherConfig  # noqa: E402

from .dynamo_indexer import Indexer  # noqa: E402
from .support import FailingSends, insert, make_cache, publisher, wait_for  # noqa: E402

PAGE = 4
Probe = tuple[list[int], Any]


def router_view(indexer: Indexer, pub: KVEventPublisher, model: str,
                probes: list[Probe]) -> list[int]:
    """What the indexer matches for each probe, asked with the namespace's wire fields."""
    encoder = BatchEncoder(pub.config)
    out = []
    for tokens, namespace in probes:
        ns = (None, None) if namespace is None else namespace
        scores = indexer.scores(tokens, model, encoder.lora_name(ns), encoder.cache_salt(ns))
        out.append(sum(scores.values()))
    return out


def assert_follows(indexer: Indexer, pub: KVEventPublisher, cache: PrefixCache, model: str,
                   probes: list[Probe]) -> None:
    expected = [cache.match(tokens, namespace).length for tokens, namespace in probes]
    seen = wait_for(lambda: router_view(indexer, pub, model, probes),
                    lambda got: got == expected, timeout=15)
    assert seen == expected, indexer.log()[-3000:]


NAMESPACES: list[Any] = [None, (None, "tenant-a"), (None, "tenant-b"), (7, None), (8, "tenant-a"),
                         ("lora-q", "tenant-a")]


def test_namespaces_apart_only_by_salt_or_integer_extra_key_stay_apart(
    indexer: Indexer,
) -> None:
    model, instance = "namespaces", 31
    rng = random.Random(11)
    stems = [list(range(s, s + 8)) for s in (0, 100, 200)]
    cache = make_cache(page_size=PAGE, capacity=512)
    with publisher() as pub:
        indexer.register(instance, model, pub, PAGE)
        time.sleep(0.3)
        for _ in range(60):
            for _ in range(rng.randint(1, 3)):
                prompt = rng.choice(stems) + [rng.randrange(30) for _ in range(rng.randint(0, 12))]
                insert(cache, prompt, rng.choice(NAMESPACES))
            if rng.random() < 0.3:
                cache.evict(full=rng.randint(1, 6) * PAGE)
            pub.publish(cache)
        probes = [(rng.choice(stems) + [rng.randrange(30) for _ in range(rng.randint(0, 12))],
                   rng.choice(NAMESPACES)) for _ in range(200)]
        probes += [(stem, namespace) for stem in stems for namespace in NAMESPACES]
        assert_follows(indexer, pub, cache, model, probes)
        assert sum(1 for tokens, ns in probes if cache.match(tokens, ns).length) > 50


def test_a_heartbeat_lets_the_router_recover_a_lost_last_batch(indexer: Indexer) -> None:
    model, instance = "heartbeat", 32
    cache = make_cache(page_size=PAGE, capacity=128)
    probes: list[Probe] = [(list(range(16)), None), (list(range(50, 62)), None)]
    with publisher(heartbeat_interval=0.2) as pub:
        indexer.register(instance, model, pub, PAGE)
        insert(cache, probes[0][0])
        pub.publish(cache)
        assert_follows(indexer, pub, cache, model, probes)
        assert pub.flush(10)
        pub._sender.socket = FailingSends(pub._sender.socket, failures=1)
        insert(cache, probes[1][0])
        (lost,) = pub.publish(cache)  # the last batch of the burst: nothing follows it
        assert_follows(indexer, pub, cache, model, probes)  # a heartbeat showed the gap
        assert f"expected seq {lost}, got {lost + 1}" in indexer.log()
        assert pub.stats()["heartbeats"] >= 1 and pub.stats()["send_errors"] == 1


def test_an_overflowed_event_queue_ends_in_a_converged_router(indexer: Indexer) -> None:
    model, instance = "overflow", 33
    cache = make_cache(page_size=PAGE, capacity=256, event_queue_limit=4)
    probes: list[Probe] = [(list(range(s, s + 12)), None) for s in range(0, 400, 40)]
    with KVEventPublisher(PublisherConfig(endpoint="tcp://127.0.0.1:0", bind=True,
                                          replay_endpoint="tcp://127.0.0.1:0")) as pub:
        indexer.register(instance, model, pub, PAGE)
        insert(cache, probes[0][0])
        pub.publish(cache)
        assert_follows(indexer, pub, cache, model, probes)
        for tokens, _ in probes[1:]:  # nine stores: more than the queue holds
            insert(cache, tokens)
        cache.evict(full=12)
        pub.publish(cache)
        assert pub.stats()["resyncs"] == 1 and pub.stats()["dropped_events"] > 0
        assert_follows(indexer, pub, cache, model, probes)
