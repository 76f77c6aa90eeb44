"""PublisherConfig: where and how a :class:`~radixkv.events.KVEventPublisher` publishes."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import ConfigError

_TCP_PORT = re.compile(r"^(tcp://.*):(\d+)$")
_MAX_PORT = 65535
_FLAGS = ("lora_from_extra_key", "legacy_arrays", "signed_hashes", "resync_on_drop")


@dataclass(frozen=True)
class PublisherConfig:
    """Configuration of a KV event publisher (the vLLM ``KVEventsConfig`` equivalents).

    ``endpoint``: the PUB socket's ZMQ endpoint. ``bind``: bind (``True``) or connect
    (``False``) it; ``None`` follows vLLM's rule: bind when the endpoint contains ``*`` or
    ``::`` or is ``ipc://`` / ``inproc://``, otherwise connect (to a central collector).
    Dynamo's indexer, llm-d's pod discovery and vllm-router connect to the engine, so with
    them the publisher must bind; one that connects logs a WARNING saying so (INFO when
    ``bind=False`` asked for it).
    ``replay_endpoint``: the ROUTER socket serving replay (always bound); ``None`` disables
    replay. ``topic``: the first frame of every message (routers filter on it, e.g.
    ``kv@{instance}@{model}``). ``buffer_steps``: how many batches replay keeps.
    ``hwm``: the PUB send high-water mark. ``dp_rank``: the data-parallel rank carried in every
    batch; like vLLM, a ``tcp://`` port (other than 0) is offset by it and ``inproc://``
    names get ``_dp{rank}``, for both endpoints. ``medium_gpu`` / ``medium_cpu`` /
    ``medium_storage``: the wire strings for the cache's ``GPU`` / ``CPU`` / ``STORAGE``
    media (other media pass through). ``lora_from_extra_key``: publish a namespace whose
    ``extra_key`` is a ``str`` with that string as ``lora_name``. ``legacy_arrays``: encode
    events as positional arrays (vLLM <= 0.23) instead of tagged maps. ``signed_hashes``:
    send block hashes as signed int64 (radixkv's event ids) instead of the uint64 that
    vLLM puts on the wire; the value is the same 64 bits either way.
    ``republish_chunk``: BlockStored events per batch in :meth:`republish_all`.
    ``heartbeat_interval``: seconds without a batch after which an empty batch (a heartbeat
    carrying the next sequence number) is sent, so a router notices a lost last batch;
    ``None`` sends none. ``resync_on_drop``: when events were lost before they reached the
    wire (the cache's event queue overflowed, the send queue was full, or a batch could not
    be encoded), the next :meth:`publish` calls :meth:`republish_all` itself.
    ``queue_batches``: batches waiting for the sending thread at most (more are dropped).
    Every field is checked here: a bad value raises :class:`~radixkv.errors.ConfigError`.
    """

    endpoint: str = "tcp://*:5557"
    replay_endpoint: str | None = None
    topic: str = ""
    bind: bool | None = None
    buffer_steps: int = 10_000
    hwm: int = 100_000
    dp_rank: int = 0
    medium_gpu: str = "GPU"
    medium_cpu: str = "CPU"
    medium_storage: str = "STORAGE"
    lora_from_extra_key: bool = True
    legacy_arrays: bool = False
    signed_hashes: bool = False
    republish_chunk: int = 1024
    heartbeat_interval: float | None = 1.0
    resync_on_drop: bool = True
    queue_batches: int = 10_000

    def __post_init__(self) -> None:
        for name in ("endpoint", "topic", "medium_gpu", "medium_cpu", "medium_storage"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"{name} must be a str, got {getattr(self, name)!r}")
        if "://" not in self.endpoint:
            raise ConfigError(f"endpoint must be a ZMQ endpoint like tcp://*:5557, got "
                              f"{self.endpoint!r}")
        if self.replay_endpoint is not None and (
            not isinstance(self.replay_endpoint, str) or "://" not in self.replay_endpoint
        ):
            raise ConfigError(f"replay_endpoint must be a ZMQ endpoint or None, got "
                              f"{self.replay_endpoint!r}")
        if self.bind is not None and not isinstance(self.bind, bool):
            raise ConfigError(f"bind must be a bool or None, got {self.bind!r}")
        for flag in _FLAGS:
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        _positive("buffer_steps", self.buffer_steps, 1)
        _positive("hwm", self.hwm, 0)
        _positive("dp_rank", self.dp_rank, 0)
        _positive("republish_chunk", self.republish_chunk, 1)
        _positive("queue_batches", self.queue_batches, 1)
        _check_interval(self.heartbeat_interval)
        if self.heartbeat_interval is not None:  # converted once, here
            object.__setattr__(self, "heartbeat_interval", float(self.heartbeat_interval))
        _check_port("endpoint", self.endpoint, self.dp_rank)
        if self.replay_endpoint is not None:
            _check_port("replay_endpoint", self.replay_endpoint, self.dp_rank)

    def binds(self) -> bool:
        """Whether the PUB socket binds (else it connects)."""
        if self.bind is not None:
            return self.bind
        endpoint = self.endpoint
        return ("*" in endpoint or "::" in endpoint
                or endpoint.startswith(("ipc://", "inproc://")))

    def pub_endpoint(self) -> str:
        """The PUB endpoint for this data-parallel rank."""
        return offset_endpoint(self.endpoint, self.dp_rank)

    def router_endpoint(self) -> str | None:
        """The replay endpoint for this data-parallel rank (``None`` when replay is off)."""
        if self.replay_endpoint is None:
            return None
        return offset_endpoint(self.replay_endpoint, self.dp_rank)

    def wire_medium(self, medium: str) -> str:
        """The string published for the cache's ``medium``."""
        if medium == "GPU":
            return self.medium_gpu
        if medium == "CPU":
            return self.medium_cpu
        if medium == "STORAGE":
            return self.medium_storage
        return medium


def offset_endpoint(endpoint: str, dp_rank: int) -> str:
    """vLLM's per-rank endpoint: ``tcp`` port + rank (port 0 stays 0), ``inproc`` name +
    ``_dp{rank}``; anything else unchanged. Rank 0 is always unchanged."""
    if dp_rank == 0:
        return endpoint
    if endpoint.startswith("inproc://"):
        return f"{endpoint}_dp{dp_rank}"
    found = _TCP_PORT.match(endpoint)
    if found is None:
        return endpoint
    port = int(found.group(2))
    return endpoint if port == 0 else f"{found.group(1)}:{port + dp_rank}"


def _positive(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")


def _check_interval(value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"heartbeat_interval must be a number of seconds or None, "
                          f"got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"heartbeat_interval must be > 0 seconds, got {value!r}")


def _check_port(name: str, endpoint: str, dp_rank: int) -> None:
    """A ``tcp://`` endpoint ends in ``:PORT`` (0..65535, also after the rank offset) or
    ``:*`` (any free port); ZMQ would otherwise bind some other port without a word."""
    if not endpoint.startswith("tcp://"):
        return
    _, sep, port = endpoint[len("tcp://"):].rpartition(":")
    if not sep:
        raise ConfigError(f"{name} {endpoint!r} has no port (tcp://HOST:PORT)")
    if port == "*":
        return
    if not port.isdigit() or not port.isascii() or int(port) > _MAX_PORT:
        raise ConfigError(f"{name} port must be 0..{_MAX_PORT} or *, got {port!r}")
    if int(port) and int(port) + dp_rank > _MAX_PORT:
        raise ConfigError(f"{name} port {port} + dp_rank {dp_rank} is past {_MAX_PORT}")
