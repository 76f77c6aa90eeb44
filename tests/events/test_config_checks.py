"""Issue #33, item 6, on the event publisher: a publisher that connects says what that means
(the usual routers connect too, and two connecting ends never meet), and ``publish_events``
refuses what is no iterable of events with a typed error."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("zmq", reason="pyzmq is not installed (pip install -e '.[events]')")
pytest.importorskip("msgpack", reason="msgpack is not installed (pip install -e '.[events]')")

from radixkv.errors import InvalidArgumentTypeError
from radixkv.events import KVEventPublisher, StorageEventPublisher

from .support import LOOPBACK, free_port


def connecting_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records
            if record.name == "radixkv.events" and "connects to" in record.getMessage()]


def test_a_publisher_that_connects_by_vllms_rule_warns_that_routers_connect_too(
        caplog: pytest.LogCaptureFixture) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    with caplog.at_level(logging.INFO, logger="radixkv.events"), \
            KVEventPublisher(endpoint=endpoint, heartbeat_interval=None) as pub:
        assert pub.endpoint == endpoint  # connected, nothing bound
    (record,) = connecting_records(caplog)
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert endpoint in message and "vLLM's rule" in message
    for consumer in ("Dynamo", "llm-d", "vllm-router"):
        assert consumer in message
    assert "nobody binds" in message and "bind=True" in message


def test_a_storage_publisher_that_connects_warns_too(caplog: pytest.LogCaptureFixture) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    with caplog.at_level(logging.WARNING, logger="radixkv.events"), \
            StorageEventPublisher(endpoint=endpoint, heartbeat_interval=None):
        pass
    assert [r.levelno for r in connecting_records(caplog)] == [logging.WARNING]


def test_connecting_on_purpose_is_said_at_info_and_binding_says_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    with caplog.at_level(logging.INFO, logger="radixkv.events"):
        with KVEventPublisher(endpoint=endpoint, bind=False, heartbeat_interval=None):
            pass
        with KVEventPublisher(endpoint=LOOPBACK, bind=True, heartbeat_interval=None):
            pass
    assert [r.levelno for r in connecting_records(caplog)] == [logging.INFO]


@pytest.mark.parametrize("events", [None, 3, "AllBlocksCleared", object()])
def test_publish_events_refuses_what_is_no_iterable_of_events(events: object) -> None:
    with KVEventPublisher(endpoint=LOOPBACK, bind=True, heartbeat_interval=None) as pub:
        sequence = pub.next_sequence
        with pytest.raises(InvalidArgumentTypeError, match="iterable of KV events"):
            pub.publish_events(events)  # type: ignore[arg-type]
        assert pub.next_sequence == sequence and pub.publish_events([]) == []


@pytest.mark.parametrize("ts", ["now", True, [1.0]])
def test_publish_events_refuses_a_timestamp_that_is_no_number(ts: object) -> None:
    with KVEventPublisher(endpoint=LOOPBACK, bind=True, heartbeat_interval=None) as pub, \
            pytest.raises(InvalidArgumentTypeError, match="ts must be"):
        pub.publish_events([], ts=ts)  # type: ignore[arg-type]
