"""(a) The stream as a separate subscriber process sees it, decoded against the schema in
``wire_schema.py``: frames, contiguous sequence numbers (the missed first batch recovered
by replay), field names, types and order, every parent announced before its children."""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("zmq", reason="pyzmq is not installed (pip install -e '.[events]')")
pytest.importorskip("msgpack", reason="msgpack is not installed (pip install -e '.[events]')")

from radixkv.core.hashing import chain_page_digests, event_id, namespace_seed
from radixkv.events import wire_hash

from .support import insert, make_cache, publisher

SCRIPT = Path(__file__).with_name("subscriber.py")
TOPIC = "kv@10.0.0.7@tiny-model"
ADAPTER = ("adapter-a", None)


class SubscriberProcess:
    """The subscriber script in its own interpreter; always terminated."""

    def __init__(self, endpoint: str, replay: str, topic: str, timeout: float = 20.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), endpoint, replay, topic, str(timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.timeout = timeout

    def wait_ready(self, timeout: float = 15.0) -> None:
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise AssertionError("the subscriber process never became ready")
        line = self.proc.stdout.readline()
        assert line.strip() == "READY", (line, self.stderr())
        time.sleep(0.3)  # let the SUB's subscription reach the PUB socket

    def finish(self, batches: int) -> dict[str, Any]:
        out, err = self.proc.communicate(f"{batches}\n", timeout=self.timeout + 10)
        assert self.proc.returncode == 0, err
        report: dict[str, Any] = json.loads(out)
        return report

    def stderr(self) -> str:
        self.close()
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def chain(tokens: list[int], namespace: tuple[object, object], page: int) -> list[int]:
    """The wire hashes (uint64) of every full page of ``tokens``, computed from the
    documented chain: SHA-256(previous digest || page as little-endian u32)."""
    key = b"".join(t.to_bytes(4, "little") for t in tokens[: len(tokens) // page * page])
    digests = chain_page_digests(namespace_seed(namespace), key, page * 4)
    return [event_id(d) & ((1 << 64) - 1) for d in digests]


def test_a_separate_subscriber_process_decodes_the_whole_stream() -> None:
    page = 4
    cache = make_cache(page_size=page, capacity=128)
    with publisher(topic=TOPIC) as pub:
        assert pub.replay_endpoint is not None
        sub = SubscriberProcess(pub.endpoint, pub.replay_endpoint, TOPIC)
        try:
            sub.wait_ready()
            steps = [
                [list(range(0, 10))],
                [[0, 1, 2, 3, 50, 51, 52, 53, 54], list(range(0, 16))],
                [list(range(100, 116)), [0, 1, 2, 3, 4, 5, 6, 7, 70, 71, 72, 73]],
            ]
            for prompts in steps:  # one batch per scheduler step
                for prompt in prompts:
                    insert(cache, prompt)
                assert len(pub.publish(cache)) == 1
            insert(cache, list(range(0, 8)), ADAPTER)
            pub.publish(cache)
            cache.evict(full=12)
            evicted = pub.publish(cache)
            assert pub.publish(cache) == []  # nothing happened: no batch
            cache.reset()
            after_reset = pub.publish(cache)
            survivors = [list(range(200, 212)), [200, 201, 202, 203, 9, 9, 9, 9]]
            for prompt in survivors:
                insert(cache, prompt)
            insert(cache, list(range(300, 308)), ADAPTER)
            pub.publish(cache)
            republished = pub.republish_all(cache)
            total = pub.next_sequence
            report = sub.finish(total)
        finally:
            sub.close()
        assert pub.stats()["send_errors"] == 0

    assert report["errors"] == []
    batches = report["batches"]
    assert [b["seq"] for b in batches] == list(range(total))
    # the start-up batch was sent before anyone listened; replay brought it back
    assert batches[0]["how"] == "replay" and report["replays"] >= 1
    assert report["end_markers"] == report["replays"]
    assert batches[0]["events"] == [{"type": "AllBlocksCleared"}]
    assert len(evicted) == 1 and all(
        e["type"] == "BlockRemoved" for e in batches[evicted[0]]["events"])
    assert len(after_reset) == 1
    assert batches[after_reset[0]]["events"] == [{"type": "AllBlocksCleared"}]
    assert batches[republished[0]]["events"] == [{"type": "AllBlocksCleared"}]
    adapter_pages = set(chain(list(range(0, 8)), ADAPTER, page))
    adapter_pages |= set(chain(list(range(300, 308)), ADAPTER, page))
    stored = [e for b in batches for e in b["events"] if e["type"] == "BlockStored"]
    assert {e["block_size"] for e in stored} == {page}
    assert {e["medium"] for e in stored} == {"GPU"}
    for event in stored:
        adapter = set(event["block_hashes"]) <= adapter_pages
        assert event["lora_name"] == ("adapter-a" if adapter else None), event
    assert any(e["lora_name"] for e in stored)
    # a router that followed the stream holds exactly the resident pages, each once
    expected = {h for p in survivors for h in chain(p, (None, None), page)}
    expected |= set(chain(list(range(300, 308)), ADAPTER, page))
    assert dict(report["held"]) == dict.fromkeys(expected, 1)
    assert {wire_hash(h, False) for e in _resident(cache) for h in e} == expected


def _resident(cache: Any) -> list[list[int]]:
    from radixkv.events import resident_pages

    return [event.block_hashes for event in resident_pages(cache)]
