"""Token validation, key packing (plain and bigram) and namespace normalisation."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

from radixkv.core.keys import (
    DEFAULT_NAMESPACE,
    TOKEN_LIMIT,
    encode_tokens,
    pack_tokens,
    unpack_tokens,
    validate_namespace,
    validate_tokens,
)
from radixkv.errors import InvalidNamespaceError, InvalidTokensError

from ..torchlike import FakeTensor, Size

# ---------------------------------------------------------------------- validate_tokens


def test_a_list_of_ints_becomes_a_uint32_array_with_the_same_values() -> None:
    out = validate_tokens([0, 7, 42, TOKEN_LIMIT - 1])
    assert out.dtype == np.uint32
    assert out.ndim == 1
    assert out.tolist() == [0, 7, 42, TOKEN_LIMIT - 1]


def test_a_tuple_of_ints_is_accepted() -> None:
    assert validate_tokens((3, 2, 1)).tolist() == [3, 2, 1]


@pytest.mark.parametrize(
    "dtype",
    [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint64, ">i8", ">u4"],
)
def test_numpy_integer_dtypes_are_converted_to_uint32(dtype: object) -> None:
    arr = np.array([0, 1, 2, 100, 127], dtype=dtype)
    out = validate_tokens(arr)
    assert out.dtype == np.uint32
    assert out.tolist() == [0, 1, 2, 100, 127]


def test_int64_tokens_up_to_the_limit_keep_their_value() -> None:
    out = validate_tokens(np.array([TOKEN_LIMIT - 1, 5], dtype=np.int64))
    assert out.tolist() == [TOKEN_LIMIT - 1, 5]


def test_a_uint32_array_is_passed_through_without_a_copy() -> None:
    arr = np.array([5, 6, 7], dtype=np.uint32)
    assert validate_tokens(arr) is arr


def test_converting_does_not_mutate_the_callers_array() -> None:
    arr = np.array([9, 8, 7], dtype=np.int64)
    out = validate_tokens(arr)
    out_list = out.tolist()
    assert arr.dtype == np.int64
    assert arr.tolist() == [9, 8, 7] == out_list


@pytest.mark.parametrize("empty", [[], (), np.zeros(0, dtype=np.int64), np.zeros(0, np.uint32)])
def test_empty_input_gives_an_empty_uint32_array(empty: object) -> None:
    out = validate_tokens(empty)
    assert out.dtype == np.uint32
    assert out.shape == (0,)


@pytest.mark.parametrize(
    "bad",
    [
        [-1],
        [TOKEN_LIMIT],
        [1, 2.5],
        [True, False],
        np.array([1.0, 2.0]),
        np.array([[1, 2], [3, 4]]),
        np.array([-3], dtype=np.int8),
        np.array([TOKEN_LIMIT], dtype=np.uint64),
        [1 << 70],
        "abc",
        b"abc",
        7,
        None,
    ],
)
def test_non_token_input_is_refused_with_invalid_tokens_error(bad: object) -> None:
    with pytest.raises(InvalidTokensError):
        validate_tokens(bad)


def test_invalid_tokens_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="outside"):
        validate_tokens([TOKEN_LIMIT + 3])


def test_a_torch_tensor_is_read_through_numpy() -> None:
    out = validate_tokens(FakeTensor(np.array([5, 6, 7], dtype=np.int64)))
    assert out.dtype == np.uint32 and out.tolist() == [5, 6, 7]


@pytest.mark.parametrize("bad", [Size([3, 4]), FakeTensor(None), FakeTensor(np.array([-1]))],
                         ids=["torch.Size", "unconvertible-tensor", "negative-tensor"])
def test_torch_objects_that_are_no_token_tensor_are_refused(bad: object) -> None:
    with pytest.raises(InvalidTokensError):
        validate_tokens(bad)
    with pytest.raises(InvalidTokensError):
        encode_tokens(bad)


@pytest.mark.parametrize(
    "raw", [b"\x01\x02", bytearray(b"\x01\x02"), memoryview(b"\x01\x02"),
            memoryview(np.array([1, 2], dtype=np.uint32))],
    ids=["bytes", "bytearray", "memoryview", "memoryview-u32"])
def test_byte_buffers_are_refused_alike(raw: object) -> None:
    with pytest.raises(InvalidTokensError, match="bytes-like"):
        validate_tokens(raw)
    with pytest.raises(InvalidTokensError, match="bytes-like"):
        encode_tokens(raw)


# ---------------------------------------------------------------------- packing


def test_pack_is_little_endian_u32_per_token() -> None:
    tokens = np.array([1, 2, 0xDEADBEEF], dtype=np.uint32)
    assert pack_tokens(tokens, bigram=False) == struct.pack("<3I", 1, 2, 0xDEADBEEF)


def test_pack_of_a_big_endian_array_is_still_little_endian() -> None:
    tokens = np.array([1, 0x01020304], dtype=">u4")
    assert pack_tokens(tokens, bigram=False) == b"\x01\x00\x00\x00\x04\x03\x02\x01"


def test_pack_of_a_strided_view_packs_only_the_viewed_tokens() -> None:
    base = np.arange(10, dtype=np.uint32)
    assert pack_tokens(base[::3], bigram=False) == struct.pack("<4I", 0, 3, 6, 9)


def test_unpack_inverts_pack() -> None:
    tokens = np.array([0, 5, TOKEN_LIMIT - 1, 17], dtype=np.uint32)
    assert unpack_tokens(pack_tokens(tokens, bigram=False), bigram=False) == tokens.tolist()


def test_pack_of_nothing_is_empty_bytes() -> None:
    assert pack_tokens(np.zeros(0, dtype=np.uint32), bigram=False) == b""


def test_bigram_pack_turns_n_plus_one_tokens_into_n_overlapping_pairs() -> None:
    tokens = np.array([10, 20, 30, 40], dtype=np.uint32)
    key = pack_tokens(tokens, bigram=True)
    assert len(key) == 3 * 8
    assert key == struct.pack("<6I", 10, 20, 20, 30, 30, 40)


@pytest.mark.parametrize("tokens", [[], [7]])
def test_bigram_pack_of_fewer_than_two_tokens_is_empty(tokens: list[int]) -> None:
    assert pack_tokens(np.array(tokens, dtype=np.uint32), bigram=True) == b""


def test_bigram_unpack_gives_the_first_token_of_each_pair() -> None:
    tokens = np.array([10, 20, 30, 40], dtype=np.uint32)
    assert unpack_tokens(pack_tokens(tokens, bigram=True), bigram=True) == [10, 20, 30]


def test_bigram_keys_differ_when_only_the_next_token_differs() -> None:
    a = pack_tokens(np.array([1, 2, 3], dtype=np.uint32), bigram=True)
    b = pack_tokens(np.array([1, 2, 4], dtype=np.uint32), bigram=True)
    assert a[:8] == b[:8]
    assert a != b


# ---------------------------------------------------------------------- namespaces


def test_none_namespace_is_the_default_pair() -> None:
    assert validate_namespace(None) == DEFAULT_NAMESPACE == (None, None)


@pytest.mark.parametrize(
    "namespace", [(None, None), ("lora-1", None), (None, "tenant"), (3, "salt"), ("a", 0)]
)
def test_valid_namespaces_are_returned_unchanged(namespace: tuple[object, object]) -> None:
    assert validate_namespace(namespace) == namespace


@pytest.mark.parametrize(
    "bad",
    [
        "lora",
        ["lora", None],
        ("only-one",),
        ("a", "b", "c"),
        (True, None),
        (None, False),
        (1.5, None),
        (None, b"salt"),
        ((1, 2), None),
        7,
    ],
)
def test_malformed_namespaces_are_refused(bad: object) -> None:
    with pytest.raises(InvalidNamespaceError):
        validate_namespace(bad)
    with pytest.raises(ValueError):
        validate_namespace(bad)


class UnhashableStr(str):
    __hash__ = None  # type: ignore[assignment]


class UnhashableInt(int):
    __hash__ = None  # type: ignore[assignment]


class Pair(tuple):  # type: ignore[type-arg]
    pass


def test_str_and_int_subclasses_are_normalised_to_plain_str_and_int() -> None:
    space = validate_namespace((UnhashableInt(3), UnhashableStr("salt")))
    assert space == (3, "salt")
    assert type(space) is tuple and type(space[0]) is int and type(space[1]) is str
    hash(space)


def test_a_tuple_subclass_namespace_becomes_a_plain_tuple() -> None:
    space = validate_namespace(Pair(("lora", None)))
    assert type(space) is tuple and space == ("lora", None)


def test_unhashable_parts_that_are_no_str_or_int_are_refused() -> None:
    for bad in (([1], None), (None, {"a": 1}), (None, {1})):
        with pytest.raises(InvalidNamespaceError):
            validate_namespace(bad)


@pytest.mark.parametrize("make", [
    lambda a: a,  # contiguous u32: packed as it is
    lambda a: a[::2],  # a strided view
    lambda a: a.astype(">u4"),  # big-endian: converted
    lambda a: a.astype(np.int64),
    lambda a: a.tolist(),
])
def test_encode_tokens_packs_every_kind_of_input_alike(make: Any) -> None:
    tokens = np.array([0, 1, 7, 65_536, 2**32 - 1, 12, 99, 3], dtype=np.uint32)
    expected = np.asarray(make(tokens)).astype(np.uint64).astype("<u4").tobytes()
    assert encode_tokens(make(tokens)) == expected


def test_encode_tokens_refuses_a_two_dimensional_u32_array() -> None:
    with pytest.raises(InvalidTokensError, match="1-D"):
        encode_tokens(np.zeros((2, 3), dtype=np.uint32))
