"""What the bytes of a stored page are, and the storage keys that follow from it.

A key is ``<layout digest>-<page hash>``: the page hash is the tree's chained page digest of
DESIGN §3 (namespaces seed the chain, so tenants never share a hash), the layout digest
covers what the hash means (:func:`~radixkv.core.hashing.key_identity`: hash function, page
size, key unit) and every fact that decides what the bytes mean. Two engines of one model
with one layout compute the same keys and share pages; any other model, dtype, page size,
component, layer range, row layout or page hash gets disjoint keys, so it can only miss.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields

import numpy as np

from ..core.hashing import key_identity, namespace_seed, page_hash, storage_key
from ..core.keys import TOKEN_BYTES, Namespace, encode_tokens, key_of, validate_namespace
from ..errors import ConfigError, ConfigTypeError

LAYOUT_VERSION = 1
"""Bumped when the meaning of a field or the key format changes: old pages become misses."""

DIGEST_HEX = 32
"""Hex digits of the layout digest in a key (128 bits of SHA-256)."""


@dataclass(frozen=True)
class StorageLayout:
    """What one component's stored pages hold, field by field; frozen and hashable.

    ``model`` names the weights (an id plus revision, say), ``dtype`` the element type (any
    numpy spelling, normalised; or a name numpy lacks, such as ``"bfloat16"``),
    ``page_size`` tokens a page, ``component`` the cache component (``"full"``, ``"swa"``,
    ``"mamba"``...), ``layers`` the half-open layer range
    ``(start, stop)`` the rows cover, ``row_shape`` the shape of one slot's row and
    ``layout`` free text for the rest (head order, tensor-parallel rank, quantisation...).
    ``page_hash`` and ``bigram`` must be the tree's (``CacheConfig.page_hash``, ``bigram``):
    they say what the page hashes in the keys are. Raises :class:`ConfigError` /
    :class:`ConfigTypeError` for a bad field (``ConfigError`` too for a page hash that is
    unknown or whose package is missing).
    """

    model: str
    dtype: str
    page_size: int
    component: str
    layers: tuple[int, int]
    row_shape: tuple[int, ...] = ()
    layout: str = ""
    page_hash: str = "sha256"
    bigram: bool = False
    digest: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("model", "dtype", "component", "layout", "page_hash"):
            if not isinstance(getattr(self, name), str):
                raise ConfigTypeError(f"StorageLayout.{name} must be a str")
        if not self.model or not self.dtype or not self.component:
            raise ConfigError("StorageLayout.model, .dtype and .component must not be empty")
        object.__setattr__(self, "dtype", _normalised_dtype(self.dtype))
        _check_ints("page_size", (self.page_size,), minimum=1)
        object.__setattr__(self, "layers", _checked_layers(self.layers))
        _check_ints("row_shape", tuple(self.row_shape), minimum=1)
        object.__setattr__(self, "row_shape", tuple(int(n) for n in self.row_shape))
        if not isinstance(self.bigram, bool):
            raise ConfigTypeError("StorageLayout.bigram must be a bool")
        page_hash(self.page_hash)
        object.__setattr__(self, "digest", self._compute_digest())

    def _compute_digest(self) -> str:
        fields = {item.name: getattr(self, item.name) for item in dataclass_fields(self)
                  if item.name != "digest"}
        fields["version"] = LAYOUT_VERSION
        fields["keys"] = key_identity(self.page_hash, self.page_size, self.bigram)
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_HEX]

    def key(self, page_digest: bytes) -> str:
        """The storage key of one page; pure."""
        return self.keys((page_digest,))[0]

    def keys(self, page_digests: Sequence[bytes]) -> list[str]:
        """The storage keys of a chain of pages, in order; pure, cost O(pages)."""
        prefix = self.digest + "-"
        return [prefix + storage_key(digest) for digest in page_digests]

    def token_keys(self, tokens: object, namespace: Namespace | None = None) -> list[str]:
        """Keys of the whole pages of ``tokens`` in ``namespace`` (the tree's own chain, for
        engines and tools that hold tokens rather than nodes); one SHA-256 a page. Raises
        :class:`~radixkv.errors.InvalidTokensError` / ``InvalidNamespaceError``."""
        hasher = page_hash(self.page_hash)
        page_bytes = self.page_size * TOKEN_BYTES * (2 if self.bigram else 1)
        key = key_of(encode_tokens(tokens), self.bigram, page_bytes)
        seed = namespace_seed(validate_namespace(namespace), hasher)
        return self.keys(hasher.chain(seed, key, page_bytes)) if key else []

    def check_buffer(self, buffer: object, rows: int) -> None:
        """Raise :class:`ConfigError` (:class:`ConfigTypeError` for no numpy array) unless
        ``buffer``, the host buffer L3 pages of this component are read into and written
        from, holds what this layout says: elements of :attr:`dtype`, rows of
        :attr:`row_shape`, at least ``rows`` of them (the host tier's slots), writable.
        Otherwise this engine's pages would be another's bytes read as another type, under
        the same keys. Pure."""
        name = f"the copy engine's host buffer of {self.component!r}"
        if not isinstance(buffer, np.ndarray) or buffer.ndim < 1:
            raise ConfigTypeError(f"{name} must be a numpy array with a slot axis first, "
                                  f"got {type(buffer).__name__}")
        if not dtype_fits(self.dtype, buffer.dtype):
            raise ConfigError(f"{name} holds {buffer.dtype} elements, its StorageLayout "
                              f"declares dtype {self.dtype!r}")
        if tuple(buffer.shape[1:]) != self.row_shape:
            raise ConfigError(f"{name} has rows of shape {tuple(buffer.shape[1:])}, its "
                              f"StorageLayout declares row_shape {self.row_shape}")
        if len(buffer) < rows:
            raise ConfigError(f"{name} has {len(buffer)} rows, the host tier has {rows} slots")
        if not buffer.flags.writeable:
            raise ConfigError(f"{name} is read-only: L3 pages are read into it")


RAW_WIDTHS = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e4m3fnuz": 1, "float8_e5m2": 1,
              "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1}
"""Bytes an element of the types numpy lacks: a host buffer may hold their bits in an
unsigned (or void) array of that width, as engines holding torch tensors must."""


def _normalised_dtype(name: str) -> str:
    """numpy's canonical spelling (``"float16"`` -> ``"<f2"``, see :func:`_canonical`)
    where numpy knows the type; other names (``"bfloat16"``, ``"float8_e4m3fn"``) are
    kept, lower-cased. Raises :class:`ConfigError` for a type of Python objects."""
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError, SyntaxError):
        return name.lower()
    if dtype.hasobject:
        raise ConfigError(f"StorageLayout.dtype {name!r} holds Python objects: its bytes are "
                          "pointers, which no other process can read")
    return _canonical(dtype)


def _canonical(dtype: np.dtype) -> str:
    """``dtype.str``, except where that is only a width: a record type is spelled by its
    fields (``"i4,f4"`` and ``"f4,i4"`` are both ``"|V8"``, and would share keys), a type
    registered by name (ml_dtypes' float8 variants are all ``"|V1"``) by that name."""
    if dtype.names is not None:
        return json.dumps(dtype.descr)
    name: str = dtype.name
    if dtype.kind == "V" and not name.startswith("void"):
        return name.lower()
    canonical: str = dtype.str
    return canonical


def dtype_fits(declared: str, actual: np.dtype) -> bool:
    """Whether a buffer of ``actual`` holds elements of the layout dtype ``declared`` (as
    normalised): the same type, or the raw bits of a type numpy lacks in an unsigned or
    void array of its width (:data:`RAW_WIDTHS`)."""
    if not actual.hasobject and _canonical(actual) == declared:
        return True
    width = RAW_WIDTHS.get(declared)
    return width is not None and actual.kind in "uV" and actual.names is None \
        and actual.itemsize == width


def _check_ints(name: str, values: tuple[object, ...], minimum: int) -> None:
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ConfigTypeError(f"StorageLayout.{name} must hold ints, got {value!r}")
        if value < minimum:
            raise ConfigError(f"StorageLayout.{name} must be >= {minimum}, got {value}")


def _checked_layers(layers: object) -> tuple[int, int]:
    if not isinstance(layers, tuple) or len(layers) != 2:
        raise ConfigTypeError(f"StorageLayout.layers must be a (start, stop) pair, got {layers!r}")
    _check_ints("layers", layers, minimum=0)
    start, stop = int(layers[0]), int(layers[1])
    if stop <= start:
        raise ConfigError(f"StorageLayout.layers must have start < stop, got {layers}")
    return (start, stop)
