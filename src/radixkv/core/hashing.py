"""Chained page hashes: the storage key and the event id of every full page.

``digest(page) = H(digest(previous page) || page key bytes)`` where a page's key bytes are
its tokens as little-endian u32 (bigram keys: the packed pairs) and ``H`` is the tree's page
hash (``TreeConfig.page_hash``): ``"sha256"`` (the default, 32-byte digests) or
``"xxh3_128"`` (xxHash's XXH3 128-bit, 16-byte canonical big-endian digests; the
``fasthash`` extra, several times cheaper per page). The chain of a namespace starts from
``H(b"radixkv-namespace-v1\\0" || repr of the namespace's types and values)``, so equal pages
in different namespaces never share a hash. The storage key is the hex digest, and what it
means (hash, page size, key unit) is :func:`key_identity`; the event id is the digest's first
8 bytes read as a big-endian signed int64, with 0 (reserved for "no parent" by routers)
mapped to 1. Digests are computed once per page, when a page is first published, and cached
on its node (``Node.hashes``).
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from .node import Node

_SEED_TAG = b"radixkv-namespace-v1\x00"
PAGE_HASHES = ("sha256", "xxh3_128")
"""Page hash names a tree accepts (``TreeConfig.page_hash``)."""
_STRUCT_IDS = 64
"""Up to this many pages a node's ids are unpacked by one precompiled ``struct``; above,
numpy."""
STRUCT_PAGES = 256
"""Up to this many pages a key is cut into pages by one ``struct`` call (compiled once per
page size and count); above, by slices."""


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


@dataclass(frozen=True)
class PageHash:
    """A page hash: its name (part of what identifies a storage key), digest size in bytes,
    and the one-shot digest function ``digest(data) -> bytes``."""

    name: str
    digest_size: int
    digest: Callable[[bytes], bytes]
    _unpackers: tuple[Callable[[bytes], tuple[int, ...]], ...] = field(
        init=False, repr=False, compare=False)
    """events: ``_unpackers[n]`` reads the event ids of ``n`` joined digests (``n`` up to
    65) in one C call: a precompiled ``struct``, so that a node's ids cost no Python loop."""
    _unsigned: tuple[Callable[[bytes], tuple[int, ...]], ...] = field(
        init=False, repr=False, compare=False)
    """The same, reading each id's 64 bits unsigned (the wire's form: no loop to mask them)."""
    _cutters: dict[tuple[int, int], Callable[[bytes], tuple[bytes, ...]]] = field(
        default_factory=dict, repr=False, compare=False)
    """Per (page bytes, key bytes), the ``struct`` unpack that cuts a key into pages."""

    def __post_init__(self) -> None:
        for name, code in (("_unpackers", "q"), ("_unsigned", "Q")):
            formats = (">" + f"{code}{self.digest_size - 8}x" * count
                       for count in range(_STRUCT_IDS + 2))
            object.__setattr__(self, name, tuple(struct.Struct(fmt).unpack for fmt in formats))

    def ids(self, digests: list[bytes], head: bytes | None = None,
            unsigned: bool = False) -> tuple[int | None, list[int]]:
        """:func:`event_id` of ``head`` (``None`` for none) and of every digest, in one C
        call for up to 64 pages; ``unsigned``: each id's 64 bits read as an unsigned integer
        instead (``event_id(digest) & (2**64 - 1)``, the wire's form). Pure."""
        joined = b"".join(digests) if head is None else head + b"".join(digests)
        count = len(digests) + (head is not None)
        ids: Sequence[int]
        if count <= _STRUCT_IDS + 1:
            ids = (self._unsigned if unsigned else self._unpackers)[count](joined)
        else:
            ids = np.frombuffer(joined, dtype=">u8" if unsigned else ">i8")[
                :: self.digest_size // 8].tolist()
        if 0 in ids:
            ids = [value or 1 for value in ids]
        if head is None:
            return None, list(ids)
        return ids[0], list(ids[1:])

    def chain(self, previous: bytes, key: bytes, page_bytes: int) -> list[bytes]:
        """Digests of each page of ``key`` chained after ``previous``; one call of
        :attr:`digest` a page, the pages cut in one C call."""
        cutter = self._cutters.get((page_bytes, len(key)))  # events: pages() inline
        pages: Sequence[bytes]
        if cutter is not None:
            pages = cutter(key)
        elif len(key) == page_bytes:  # one page, no comprehension to set up
            return [self.digest(previous + key)]
        else:
            pages = self.pages(key, page_bytes)
        if self.digest is _sha256:  # events: hashlib's two C calls inline, no Python call
            sha = hashlib.sha256
            return [previous := sha(previous + page).digest() for page in pages]
        digest = self.digest
        return [previous := digest(previous + page) for page in pages]

    def pages(self, key: bytes, page_bytes: int) -> Sequence[bytes]:
        """``key`` cut into pages of ``page_bytes``: one precompiled ``struct`` call for up
        to :data:`STRUCT_PAGES` pages (no Python work a page), slices above."""
        count = len(key) // page_bytes
        if count > STRUCT_PAGES:
            return [key[offset : offset + page_bytes] for offset in range(0, len(key), page_bytes)]
        cutter = self._cutters.get((page_bytes, len(key)))
        if cutter is None:
            cutter = self._cutters[page_bytes, len(key)] = struct.Struct(
                f"{page_bytes}s" * count).unpack
        return cutter(key)


SHA256 = PageHash("sha256", 32, _sha256)


def page_hash(name: str) -> PageHash:
    """The page hash called ``name``; raises :class:`ConfigError` for an unknown name, or
    for ``"xxh3_128"`` when the ``xxhash`` package (``radixkv[fasthash]``) is missing."""
    if name == "sha256":
        return SHA256
    if name == "xxh3_128":
        try:
            return _xxh3_128()
        except ImportError as exc:
            raise ConfigError("page_hash 'xxh3_128' needs the xxhash package: pip install "
                              "'radixkv[fasthash]'") from exc
    raise ConfigError(f"unknown page_hash {name!r}; valid: {', '.join(PAGE_HASHES)}")


@functools.lru_cache(maxsize=1)
def _xxh3_128() -> PageHash:
    """Built once, so that its structs are shared; an ImportError is not cached."""
    import xxhash

    return PageHash("xxh3_128", 16, xxhash.xxh3_128_digest)


def key_identity(page_hash: str, page_size: int, bigram: bool) -> str:
    """What a storage key of this tree means, for a key's digest to carry: the chain's
    version, hash, page size and key unit, e.g. ``"radixkv-v1/sha256/page=16/u32le"``. Two
    trees' keys name the same bytes only when their identities are equal."""
    unit = "u32le-bigram" if bigram else "u32le"
    return f"radixkv-v1/{page_hash}/page={page_size}/{unit}"


def namespace_seed(namespace: tuple[object, object], hasher: PageHash = SHA256) -> bytes:
    """Digest that seeds the chain of ``namespace``; distinct namespaces give distinct seeds
    (memoized by types and values: a namespace's first pages do not rehash it)."""
    return _seed((type(namespace[0]).__name__, namespace[0], type(namespace[1]).__name__,
                  namespace[1]), hasher)


@functools.lru_cache(maxsize=4096)
def _seed(typed: tuple[str, object, str, object], hasher: PageHash) -> bytes:
    return hasher.digest(_SEED_TAG + repr(typed).encode())


def chain_page_digests(previous: bytes, key: bytes, page_bytes: int,
                       hasher: PageHash = SHA256) -> list[bytes]:
    """Digests of each page of ``key`` chained after ``previous``; cost one hash a page."""
    return hasher.chain(previous, key, page_bytes)


def event_id(digest: bytes) -> int:
    """Non-zero signed int64 id of a page digest (its first 8 bytes, big-endian)."""
    value = int.from_bytes(digest[:8], "big", signed=True)
    return value if value != 0 else 1


def event_ids(digests: list[bytes], hasher: PageHash = SHA256) -> list[int]:
    """:func:`event_id` of every digest (all ``hasher.digest_size`` bytes), in one C call."""
    return hasher.ids(digests)[1]


def storage_key(digest: bytes) -> str:
    """The L3 storage key of a page: its hex digest (see :func:`key_identity`)."""
    return digest.hex()


def page_digests(node: Node, page_bytes: int, hasher: PageHash = SHA256) -> list[bytes]:
    """The chained digests of ``node``'s pages, computed on first use and cached on the node
    (and on any ancestor that lacked them); cost one hash per page not yet hashed."""
    hashes = node.hashes
    if hashes is not None:
        return hashes
    parent = node.parent
    if parent is None:
        return []
    if parent.parent is None or parent.hashes is not None:  # the common case: one node
        node.hashes = hashes = hasher.chain(previous_digest(node, hasher), node.key, page_bytes)
        return hashes
    pending: list[Node] = []
    current: Node | None = node
    while current is not None and current.parent is not None and current.hashes is None:
        pending.append(current)
        current = current.parent
    for item in reversed(pending):
        item.hashes = hasher.chain(previous_digest(item, hasher), item.key, page_bytes)
    assert node.hashes is not None
    return node.hashes


def previous_digest(node: Node, hasher: PageHash = SHA256) -> bytes:
    """Digest the chain of ``node``'s first page continues from (parent's last page, or the
    namespace seed under a root); the parent's digests must already be computed."""
    parent = node.parent
    assert parent is not None
    if parent.parent is None:
        return namespace_seed(node.namespace, hasher)
    assert parent.hashes
    return parent.hashes[-1]
