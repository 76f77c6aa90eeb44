"""The storage event stream read by the real router: NVIDIA Dynamo's KV indexer 1.6.1
accepts medium ``STORAGE`` (its disk tier) from a storage publisher registered as its own
instance, and counts the pages whose L3 put landed, nothing before; an engine that restored
a prefix from L3 announces it on its own stream, so what it writes below is indexed too."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .support import require_dynamo_indexer

zmq = require_dynamo_indexer()

from radixkv.events import StorageEventPublisher  # noqa: E402
from radixkv.storage import FileStorage, FileStorageConfig  # noqa: E402

from ..storage.tier_support import PAGE, engine, serve  # noqa: E402
from .dynamo_indexer import Indexer  # noqa: E402
from .support import LOOPBACK, wait_for  # noqa: E402

PROMPT = list(range(100, 132))  # 8 pages
STORE = 40  # the instance id the router gives the store's stream


def test_storage_events_count_as_the_disk_tier_of_the_store_instance(
        indexer: Indexer, tmp_path: Path) -> None:
    model = "storage-stream"
    made = engine(FileStorage(FileStorageConfig(root=tmp_path / "l3")), events=True)
    pub = StorageEventPublisher(endpoint=LOOPBACK, bind=True, replay_endpoint=LOOPBACK)

    def tiers(tokens: list[int]) -> dict[str, Any]:
        status, reply = indexer.post("/query", {"token_ids": tokens, "model_name": model})
        assert status == 200, reply
        found = reply["instances"].get(str(STORE), {})
        return {k: found.get(k) for k in ("gpu", "cpu", "disk")}

    try:
        indexer.register(STORE, model, pub, PAGE)
        time.sleep(0.3)
        serve(made, PROMPT)
        assert pub.publish(made.cache) == []  # the put has not landed: nothing to say
        assert made.cache.storage is not None
        made.cache.storage.settle()
        assert len(pub.publish(made.cache)) == 1
        expected = {"gpu": 0, "cpu": 0, "disk": 32}
        assert wait_for(lambda: tiers(PROMPT), lambda got: got == expected) == expected
        assert wait_for(lambda: tiers(PROMPT[:16] + [7] * 8),
                        lambda got: got["disk"] == 16)["disk"] == 16
        assert indexer.scores(PROMPT, model) == {}  # scores count the device tier only
    finally:
        pub.close()
        made.cache.close()


def _disk(indexer: Indexer, model: str, instance: int, tokens: list[int]) -> int:
    status, reply = indexer.post("/query", {"token_ids": tokens, "model_name": model})
    assert status == 200, reply
    return int(reply["instances"].get(str(instance), {}).get("disk") or 0)


def test_pages_written_below_a_restored_prefix_are_indexed_on_the_restoring_stream(
        indexer: Indexer, tmp_path: Path) -> None:
    model = "storage-two-engines"
    first = engine(FileStorage(FileStorageConfig(root=tmp_path / "l3")), events=True)
    second = engine(FileStorage(FileStorageConfig(root=tmp_path / "l3")), events=True,
                    wait_policy="wait_complete")
    pubs = [StorageEventPublisher(endpoint=LOOPBACK, bind=True, replay_endpoint=LOOPBACK)
            for _ in range(2)]
    longer = [*PROMPT, *range(300, 316)]  # PROMPT's 8 pages and 4 more
    try:
        for instance, pub in zip((41, 42), pubs):
            indexer.register(instance, model, pub, PAGE)
        time.sleep(0.3)
        serve(first, PROMPT)
        assert first.cache.storage is not None
        first.cache.storage.settle()
        pubs[0].publish(first.cache)
        assert serve(second, longer) == 32  # restored from L3, then 4 pages computed
        assert second.cache.storage is not None
        second.cache.storage.settle()
        assert len(pubs[1].publish(second.cache)) == 1
        assert wait_for(lambda: _disk(indexer, model, 42, longer),
                        lambda got: got == 48) == 48
        assert _disk(indexer, model, 41, longer) == 32
    finally:
        for pub in pubs:
            pub.close()
        first.cache.close()
        second.cache.close()

