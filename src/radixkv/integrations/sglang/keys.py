"""SGLang's ``RadixKey`` as radixkv tokens and namespace.

A ``RadixKey`` (``sglang/srt/mem_cache/radix_cache.py``) carries raw ``token_ids``
(``array('q')``), ``extra_key`` (LoRA id and other namespacing), ``cache_salt`` (tenant
salt; ``""`` is normalised to ``None``), ``is_bigram`` (EAGLE: N+1 raw tokens are N bigrams)
and ``limit`` (use only the first ``limit`` raw tokens). radixkv's namespace is the pair
``(extra_key, cache_salt)``; bigram keys are a cache-wide setting (``CacheConfig(bigram=)``),
so a key's ``is_bigram`` must agree with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["key_length", "key_tokens", "namespace_of", "request_namespace", "tokens_of"]

Namespace = tuple[object, object]


def namespace_of(extra_key: Any, cache_salt: Any) -> Namespace | None:
    """radixkv namespace of an SGLang ``(extra_key, cache_salt)``; ``None`` for the default."""
    salt = cache_salt or None
    if extra_key is None and salt is None:
        return None
    return (extra_key, salt)


def request_namespace(req: Any) -> Namespace | None:
    """Namespace of an SGLang ``Req`` (its ``extra_key`` and ``cache_salt``)."""
    return namespace_of(getattr(req, "extra_key", None), getattr(req, "cache_salt", None))


def tokens_of(token_ids: Any, limit: int | None = None) -> npt.NDArray[np.int64]:
    """Raw token ids (``array('q')``, list or tensor) as numpy int64, cut at ``limit``."""
    if isinstance(token_ids, np.ndarray):
        tokens = token_ids.astype(np.int64, copy=False)
    elif getattr(token_ids, "typecode", None) == "q":
        # a copy, not a view: SGLang extends the request's array('q') later, and an array
        # that exports its buffer cannot be resized
        tokens = np.frombuffer(token_ids, dtype=np.int64).copy()
    else:
        tokens = np.asarray(list(token_ids), dtype=np.int64)
    if limit is not None and limit < len(tokens):
        tokens = tokens[:limit]
    return tokens


def key_tokens(key: Any, bigram: bool) -> tuple[npt.NDArray[np.int64], Namespace | None]:
    """Tokens and namespace of a ``RadixKey``. Raises ``ValueError`` when the key's bigram
    mode contradicts the cache's (the cache turns a plain key into bigrams itself when
    ``bigram`` is set, as SGLang's own ``maybe_to_bigram_view`` does)."""
    if getattr(key, "is_bigram", False) and not bigram:
        raise ValueError("radixkv: a bigram RadixKey reached a cache built without EAGLE "
                         "bigram keys")
    tokens = tokens_of(key.token_ids, getattr(key, "limit", None))
    return tokens, namespace_of(key.extra_key, getattr(key, "cache_salt", None))


def key_length(num_tokens: int, bigram: bool) -> int:
    """Key elements of ``num_tokens`` raw tokens (bigrams: one fewer)."""
    return max(0, num_tokens - 1) if bigram else num_tokens
