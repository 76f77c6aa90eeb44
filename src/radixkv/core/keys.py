"""Token validation and key packing.

A key is ``bytes``: each key element packed little-endian, 4 bytes per token, or 8 bytes per
bigram (two overlapping tokens) when bigram keys are on. Packing makes comparing an edge one
C-level ``bytes ==`` and lets the tree slice keys without per-token Python work.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

import numpy as np

from ..errors import InvalidNamespaceError, InvalidTokensError

TOKEN_BYTES = 4
"""Bytes of one packed token (little-endian u32); a bigram key element is two of them."""

TOKEN_LIMIT = 1 << (8 * TOKEN_BYTES)

Namespace = tuple[object, object]
"""``(extra_key, cache_salt)``; each part is ``None``, a ``str`` or an ``int``."""

DEFAULT_NAMESPACE: Namespace = (None, None)

_EMPTY_TOKENS = np.zeros(0, dtype=np.uint32)
_U32 = np.dtype("<u4")

# bench match_prefix: array('I') converts a list of ints in one C loop, faster than
# struct.pack(*tokens); it packs native order, so only where that is little-endian u32
NATIVE_U32 = sys.byteorder == "little" and array("I").itemsize == TOKEN_BYTES


def validate_tokens(tokens: Any) -> np.ndarray:
    """Return ``tokens`` as a 1-D ``uint32`` array; pure, cost O(n) in C.

    Accepts a sequence of Python ints, a 1-D numpy integer array or a torch tensor (torch
    is never imported: its objects are recognised by their type's module name). Raises
    :class:`InvalidTokensError` for non-integers, bools (a bool array, or a sequence of only
    bools; bools among ints count as ints, as numpy reads them), values < 0 or >= 2**32, a
    shape other than 1-D, a torch object that is no tensor (``torch.Size``) or does not
    convert to numpy, and bytes-like buffers (``bytes``, ``bytearray``, ``memoryview``: their
    items are bytes, not tokens; wrap them with ``np.frombuffer`` and the intended dtype).
    """
    module = type(tokens).__module__
    if module == "torch" or module.startswith("torch."):
        tokens = _torch_to_numpy(tokens)
    if isinstance(tokens, np.ndarray):
        arr = tokens
    else:
        if isinstance(tokens, (bytes, bytearray, memoryview)):
            raise InvalidTokensError(
                f"tokens must be a sequence of ints, got a bytes-like {type(tokens).__name__}")
        if isinstance(tokens, str) or not hasattr(tokens, "__len__"):
            raise InvalidTokensError(
                f"tokens must be a sequence of ints, got {type(tokens).__name__}"
            )
        if len(tokens) == 0:
            return _EMPTY_TOKENS
        try:
            arr = np.asarray(tokens)
        except (OverflowError, ValueError) as exc:
            raise InvalidTokensError(f"tokens are not a flat sequence of ints: {exc}") from None
    return _checked(arr)


def _torch_to_numpy(tokens: Any) -> np.ndarray:
    if not isinstance(tokens, tuple):  # torch.Size is a tuple of dimensions, not tokens
        try:
            arr = tokens.detach().cpu().numpy()
        except (AttributeError, TypeError, RuntimeError, ValueError) as exc:
            raise InvalidTokensError(
                f"tokens: a {type(tokens).__name__} from torch that does not convert to "
                f"numpy ({exc})") from None
        if isinstance(arr, np.ndarray):
            return arr
    raise InvalidTokensError(f"tokens: a torch {type(tokens).__name__} is no tensor")


def _checked(arr: np.ndarray) -> np.ndarray:
    if arr.ndim != 1:
        raise InvalidTokensError(f"tokens must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind not in "iu" and arr.size:
        raise InvalidTokensError(f"tokens must be integers, got dtype {arr.dtype}")
    if arr.size == 0:
        return _EMPTY_TOKENS
    if arr.dtype == np.uint32:
        return arr
    low, high = int(arr.min()), int(arr.max())
    if low < 0 or high >= TOKEN_LIMIT:
        bad = low if low < 0 else high
        raise InvalidTokensError(f"token {bad} is outside [0, 2**32)")
    return arr.astype(np.uint32)


def encode_tokens(tokens: Any) -> bytes:
    """Validate ``tokens`` and pack them as little-endian u32, 4 bytes a token; pure.

    Lists and tuples of ints take one C loop that validates as it packs (the bench's
    match_prefix path); anything else, or a list that fails, goes through
    :func:`validate_tokens`, which raises the precise :class:`InvalidTokensError`.
    """
    # bench sim (uint32 prompts): an array of u32 already packs as it is (2.0 -> 0.4 us at
    # 896 tokens); any other array (dtype, byte order, shape) is validated below
    if type(tokens) is np.ndarray and tokens.dtype is _U32 and tokens.ndim == 1:
        return tokens.tobytes()
    # numpy reads an all-bool sequence as bool dtype (rejected): such input takes the slow path
    if NATIVE_U32 and (type(tokens) is list or type(tokens) is tuple) and not (
            tokens and type(tokens[0]) is bool):
        packed = array("I")
        try:
            # bench match_prefix: fromlist reads list items directly, ~25% faster than the
            # constructor's generic sequence loop
            if type(tokens) is list:
                packed.fromlist(tokens)
            else:
                packed.extend(tokens)
            return packed.tobytes()
        except (TypeError, OverflowError):
            pass
    return validate_tokens(tokens).astype("<u4", copy=False).tobytes()


def key_of(packed: bytes, bigram: bool, page_bytes: int) -> bytes:
    """The tree key of packed tokens: bigrams if asked, cut down to whole pages."""
    if bigram:
        packed = pack_tokens(np.frombuffer(packed, dtype="<u4"), True)
    return packed[: len(packed) - len(packed) % page_bytes]


def pack_tokens(tokens: np.ndarray, bigram: bool) -> bytes:
    """Pack validated tokens into a key: 4 bytes a token, or 8 bytes a bigram (n-1 of them)."""
    little = tokens.astype("<u4", copy=False)
    if not bigram:
        return little.tobytes()
    if little.size < 2:
        return b""
    return np.stack((little[:-1], little[1:]), axis=1).tobytes()


def unpack_tokens(key: bytes, bigram: bool) -> list[int]:
    """Token ids of a key (the first token of each bigram); for events and debugging. One C
    call where the key's little-endian u32 is the native unsigned int."""
    if NATIVE_U32:
        # events: a memoryview cast has a third of numpy's fixed cost on a page's key
        view = memoryview(key).cast("I")
        listed: list[int] = (view[::2] if bigram else view).tolist()
        return listed
    flat = np.frombuffer(key, dtype="<u4")
    tokens: list[int] = (flat[::2] if bigram else flat).tolist()
    return tokens


def validate_namespace(namespace: object) -> Namespace:
    """Normalize a namespace: ``None`` is the default namespace ``(None, None)``.

    Raises :class:`InvalidNamespaceError` unless it is ``None`` or a 2-tuple whose parts are
    ``None``, ``str`` or ``int`` (not bool). Subclasses are normalised: a tuple subclass to a
    plain tuple, a ``str`` or ``int`` subclass (an ``IntEnum``, say) to the plain ``str`` or
    ``int`` of the same value, so every namespace hashes and compares as plain data.
    """
    if namespace is None:
        return DEFAULT_NAMESPACE
    if type(namespace) is tuple and len(namespace) == 2:
        extra, salt = namespace
        # bench admit: plain parts take three type tests
        if (extra is None or type(extra) is str or type(extra) is int) and (
                salt is None or type(salt) is str or type(salt) is int):
            return namespace
    if not isinstance(namespace, tuple) or len(namespace) != 2:
        raise InvalidNamespaceError(
            f"namespace must be None or an (extra_key, cache_salt) pair, got {namespace!r}"
        )
    return (_plain_part(namespace[0]), _plain_part(namespace[1]))


def _plain_part(part: object) -> object:
    if part is None:
        return None
    if isinstance(part, str):
        return str.__str__(part)  # the plain str of a subclass
    if isinstance(part, int) and not isinstance(part, bool):
        return int.__int__(part)
    raise InvalidNamespaceError(
        f"namespace parts must be None, str or int, got {type(part).__name__}")
