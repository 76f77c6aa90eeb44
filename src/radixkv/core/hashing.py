"""Chained page hashes: the storage key and the event id of every full page.

``digest(page) = SHA-256(digest(previous page) || page key bytes)`` where a page's key bytes
are its tokens as little-endian u32 (bigram keys: the packed pairs). The chain of a namespace
starts from ``namespace_seed(namespace)``, so equal pages in different namespaces never share
a hash. The storage key is the hex digest; the event id is the first 8 bytes read as a
big-endian signed int64, with 0 (reserved for "no parent" by routers) mapped to 1.
"""

from __future__ import annotations

import hashlib

from .node import Node

_SEED_TAG = b"radixkv-namespace-v1\x00"


def namespace_seed(namespace: tuple[object, object]) -> bytes:
    """Digest that seeds the chain of ``namespace``; distinct namespaces give distinct seeds."""
    encoded = repr((type(namespace[0]).__name__, namespace[0], type(namespace[1]).__name__,
                    namespace[1])).encode()
    return hashlib.sha256(_SEED_TAG + encoded).digest()


def chain_page_digests(previous: bytes, key: bytes, page_bytes: int) -> list[bytes]:
    """Digests of each page of ``key`` chained after ``previous``; cost one SHA-256 a page."""
    sha = hashlib.sha256
    out: list[bytes] = []
    for offset in range(0, len(key), page_bytes):
        previous = sha(previous + key[offset : offset + page_bytes]).digest()
        out.append(previous)
    return out


def event_id(digest: bytes) -> int:
    """Non-zero signed int64 id of a page digest (its first 8 bytes, big-endian)."""
    value = int.from_bytes(digest[:8], "big", signed=True)
    return value if value != 0 else 1


def storage_key(digest: bytes) -> str:
    """The L3 storage key of a page: its hex digest."""
    return digest.hex()


def page_digests(node: Node, page_bytes: int) -> list[bytes]:
    """The chained digests of ``node``'s pages, computed on first use and cached on the node
    (and on any ancestor that lacked them); cost one SHA-256 per page not yet hashed."""
    pending: list[Node] = []
    current: Node | None = node
    while current is not None and current.parent is not None and current.hashes is None:
        pending.append(current)
        current = current.parent
    for item in reversed(pending):
        item.hashes = chain_page_digests(previous_digest(item), item.key, page_bytes)
    assert node.hashes is not None or node.parent is None
    return node.hashes or []


def previous_digest(node: Node) -> bytes:
    """Digest the chain of ``node``'s first page continues from (parent's last page, or the
    namespace seed under a root); the parent's digests must already be computed."""
    parent = node.parent
    assert parent is not None
    if parent.parent is None:
        return namespace_seed(node.namespace)
    assert parent.hashes
    return parent.hashes[-1]
