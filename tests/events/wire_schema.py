"""The KV-event wire schema the tests hold the publisher to (vLLM's current form).

Written from the wire notes, independently of ``radixkv.events``: the subscriber process
imports only this module, pyzmq and msgpack. Every check returns error strings rather than
raising, so one run reports every deviation it saw.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import msgpack

U64 = 1 << 64
END_SEQ = b"\xff" * 8

Check = Callable[[Any], bool]


def _int(value: Any) -> bool:
    return type(value) is int


def _hash(value: Any) -> bool:
    """vLLM sends block hashes as uint64 (non-zero: routers read 0 as 'no parent')."""
    return _int(value) and 0 < value < U64


def _hashes(value: Any) -> bool:
    return type(value) is list and len(value) > 0 and all(_hash(v) for v in value)


def _tokens(value: Any) -> bool:
    return type(value) is list and all(_int(v) and 0 <= v < 1 << 32 for v in value)


def _str(value: Any) -> bool:
    return type(value) is str


def _nil(value: Any) -> bool:
    return value is None


def _hash_or_nil(value: Any) -> bool:
    return value is None or _hash(value)


def _str_or_nil(value: Any) -> bool:
    return value is None or _str(value)


# Keys in the exact order vLLM writes them (type first, then declaration order), with the
# type each must have. Optional vLLM fields (extra_keys, group_idx, ...) must be absent.
EVENT_FIELDS: dict[str, list[tuple[str, Check]]] = {
    "BlockStored": [
        ("type", _str),
        ("block_hashes", _hashes),
        ("parent_block_hash", _hash_or_nil),
        ("token_ids", _tokens),
        ("block_size", lambda v: _int(v) and v > 0),
        ("lora_id", _nil),
        ("medium", _str),
        ("lora_name", _str_or_nil),
    ],
    "BlockRemoved": [
        ("type", _str),
        ("block_hashes", _hashes),
        ("medium", _str),
    ],
    "AllBlocksCleared": [("type", _str)],
}
OPTIONAL_FIELDS: dict[str, list[tuple[str, Check]]] = {
    # not a vLLM field (its decoder skips unknown keys); NVIDIA Dynamo folds it into its hash
    "BlockStored": [("cache_salt", _str)],
}
"""Keys that may follow the required ones, in this order, when the namespace needs them."""
MEDIA = {"GPU", "CPU", "STORAGE"}


def decode_batch(payload: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """Decode one payload; returns its events (as ordered dicts) and the schema errors."""
    errors: list[str] = []
    if payload[:2] != b"\x93\xcb":
        errors.append(f"batch must start 93 cb (3-array, float64 ts), got {payload[:2].hex()}")
    try:
        batch = msgpack.unpackb(payload, raw=False, object_pairs_hook=list,
                                strict_map_key=True)
    except Exception as exc:  # the report says what broke
        return [], [f"payload does not decode: {exc!r}"]
    if type(batch) is not list or len(batch) != 3:
        return [], [f"batch must be a 3-element array, got {batch!r:.80}"]
    ts, events, dp_rank = batch
    if type(ts) is not float or ts <= 0:
        errors.append(f"ts must be a positive float, got {ts!r}")
    if not _int(dp_rank) or dp_rank < 0:
        errors.append(f"dp_rank must be a non-negative int, got {dp_rank!r}")
    if type(events) is not list or not events:
        return [], [*errors, f"events must be a non-empty array, got {events!r:.80}"]
    decoded = []
    for pairs in events:
        event, problems = check_event(pairs)
        errors.extend(problems)
        if event is not None:
            decoded.append(event)
    return decoded, errors


def check_event(pairs: Any) -> tuple[dict[str, Any] | None, list[str]]:
    if type(pairs) is not list or not pairs or type(pairs[0]) is not tuple:
        return None, [f"an event must be a map, got {pairs!r:.80}"]
    keys = [key for key, _ in pairs]
    tag = pairs[0][1] if keys[0] == "type" else None
    if tag not in EVENT_FIELDS:
        return None, [f"first key must be 'type' with a known tag, got {pairs!r:.80}"]
    required = EVENT_FIELDS[tag]
    fields = required + OPTIONAL_FIELDS.get(tag, [])[: max(0, len(keys) - len(required))]
    errors = []
    if keys != [name for name, _ in fields]:
        errors.append(f"{tag} keys {keys} != {[name for name, _ in fields]}")
    event = dict(pairs)
    for name, check in fields:
        if name in event and not check(event[name]):
            errors.append(f"{tag}.{name} has a bad value {event[name]!r:.80}")
    if "medium" in event and event["medium"] not in MEDIA:
        errors.append(f"{tag}.medium {event['medium']!r} is not one of {sorted(MEDIA)}")
    if tag == "BlockStored" and not errors:
        pages = len(event["block_hashes"])
        if len(event["token_ids"]) != pages * event["block_size"]:
            errors.append(f"BlockStored carries {len(event['token_ids'])} tokens for "
                          f"{pages} pages of {event['block_size']}: not full pages")
    return event, errors


class Mirror:
    """What a router learns from the stream: held pages (reference-counted), checked as
    they come: a parent must be held when a child names it, a removal must name a held
    page."""

    def __init__(self) -> None:
        self.held: Counter[int] = Counter()
        self.errors: list[str] = []

    def apply(self, event: dict[str, Any]) -> None:
        tag = event["type"]
        if tag == "AllBlocksCleared":
            self.held.clear()
        elif tag == "BlockStored":
            parent = event["parent_block_hash"]
            if parent is not None and not self.held[parent]:
                self.errors.append(f"BlockStored names parent {parent} never announced")
            for block in event["block_hashes"]:
                self.held[block] += 1
        elif tag == "BlockRemoved":
            for block in event["block_hashes"]:
                if not self.held[block]:
                    self.errors.append(f"BlockRemoved names {block}, which is not held")
                else:
                    self.held[block] -= 1
            self.held = +self.held
