"""Token and namespace inputs at the cache's entry points (issue 11, item 9): what each
unusual input means, or the radixkv error it gets, with the cache unchanged."""

from __future__ import annotations

import enum

import numpy as np
import pytest

from radixkv.errors import InvalidTokensError

from ..audited import AuditedCache, assert_refused
from ..torchlike import FakeTensor, Size


class Adapter(enum.IntEnum):
    CHAT = 3


class Tenant(str):
    __hash__ = None  # type: ignore[assignment]


def test_a_namespace_of_int_and_str_subclasses_is_the_plain_namespace() -> None:
    cache = AuditedCache(capacity=64)
    cache.finish(cache.admit([1, 2, 3, 4], (Adapter.CHAT, Tenant("acme"))))
    assert cache.match([1, 2, 3, 4], (3, "acme")).length == 4
    assert cache.match([1, 2, 3, 4]).length == 0
    assert set(cache.tree.roots) == {(3, "acme")}
    assert all(type(part) in (int, str) for part in next(iter(cache.tree.roots)))


def test_a_tensor_of_tokens_is_admitted_like_its_numpy_values() -> None:
    cache = AuditedCache(capacity=64)
    lease = cache.admit(FakeTensor(np.array([5, 6, 7, 8], dtype=np.int64)))
    assert lease.tokens.tolist() == [5, 6, 7, 8]
    cache.finish(lease)
    assert cache.match([5, 6, 7, 8]).length == 4


@pytest.mark.parametrize("tokens", [Size([4, 4]), FakeTensor(None), bytearray(b"\x05\x06"),
                                    memoryview(b"\x05\x06")],
                         ids=["torch.Size", "meta-tensor", "bytearray", "memoryview"])
def test_torch_non_tensors_and_byte_buffers_are_refused_with_nothing_changed(
    tokens: object,
) -> None:
    cache = AuditedCache(capacity=64)
    lease = cache.admit([5, 6])
    for call in (lambda: cache.admit(tokens), lambda: cache.match(tokens),
                 lambda: cache.extend(lease, tokens)):
        assert_refused(cache, InvalidTokensError, call)
    cache.finish(lease)
