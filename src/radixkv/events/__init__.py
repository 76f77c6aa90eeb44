"""KV events on the vLLM ZMQ wire, for KV-aware routers (NVIDIA Dynamo, llm-d, ...).

Needs the ``events`` extra (pyzmq, msgpack). Build the cache with
``CacheConfig(events=True)``, make one :class:`KVEventPublisher`, and call
``publisher.publish(cache)`` once per scheduler step. With a storage tier, a
:class:`StorageEventPublisher` publishes the pages written to the shared store on their own
endpoint and topic.
"""

from .publisher import KVEventPublisher
from .publisher_config import PublisherConfig, offset_endpoint
from .replay import ReplayBuffer
from .snapshot import resident_pages
from .storage_publisher import STORAGE_ENDPOINT, STORAGE_TOPIC, StorageEventPublisher
from .wire import END_SEQUENCE, BatchEncoder, sequence_frame, wire_hash

__all__ = [
    "END_SEQUENCE",
    "STORAGE_ENDPOINT",
    "STORAGE_TOPIC",
    "BatchEncoder",
    "KVEventPublisher",
    "PublisherConfig",
    "ReplayBuffer",
    "StorageEventPublisher",
    "offset_endpoint",
    "resident_pages",
    "sequence_frame",
    "wire_hash",
]
