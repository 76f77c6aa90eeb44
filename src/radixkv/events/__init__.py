"""KV events on the vLLM ZMQ wire, for KV-aware routers (NVIDIA Dynamo, llm-d, ...).

Needs the ``events`` extra (pyzmq, msgpack). Build the cache with
``CacheConfig(events=True)``, make one :class:`KVEventPublisher`, and call
``publisher.publish(cache)`` once per scheduler step.
"""

from .config import PublisherConfig, offset_endpoint
from .publisher import KVEventPublisher
from .replay import ReplayBuffer
from .snapshot import resident_pages
from .wire import END_SEQUENCE, BatchEncoder, sequence_frame, wire_hash

__all__ = [
    "END_SEQUENCE",
    "BatchEncoder",
    "KVEventPublisher",
    "PublisherConfig",
    "ReplayBuffer",
    "offset_endpoint",
    "resident_pages",
    "sequence_frame",
    "wire_hash",
]
