"""Tests of as_slot_array: what it accepts, what it converts, and how it refuses."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from radixkv.errors import InvalidSlotsError, InvalidSlotsTypeError, RadixKVError
from radixkv.memory import as_slot_array
from radixkv.memory.slot_arrays import page_table

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


class FakeTensor:
    """Quacks like a torch tensor; its type's module says "torch" so it takes the torch path."""

    __module__ = "torch"

    def __init__(self, values: np.ndarray[Any, Any]) -> None:
        self.values = values
        self.calls: list[str] = []

    def detach(self) -> FakeTensor:
        self.calls.append("detach")
        return self

    def cpu(self) -> FakeTensor:
        self.calls.append("cpu")
        return self

    def numpy(self) -> np.ndarray[Any, Any]:
        self.calls.append("numpy")
        return self.values


class FakeTorchThing:
    """From a "torch" module, but not a tensor (like torch.Size)."""

    __module__ = "torch.nn"


def test_contiguous_int64_is_returned_without_copy() -> None:
    slots = np.array([3, 1, 2], dtype=np.int64)
    assert as_slot_array(slots) is slots


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_every_integer_dtype_converts_to_int64(dtype: str) -> None:
    result = as_slot_array(np.array([0, 5, 7], dtype=dtype))
    assert result.dtype == np.int64
    assert result.tolist() == [0, 5, 7]


def test_strided_view_becomes_contiguous_copy() -> None:
    base = np.arange(10, dtype=np.int64)
    result = as_slot_array(base[::3])
    assert result.flags.c_contiguous
    assert result.tolist() == [0, 3, 6, 9]


def test_big_endian_int64_is_converted_to_native() -> None:
    result = as_slot_array(np.array([1, 2], dtype=">i8"))
    assert result.dtype == np.dtype(np.int64)
    assert result.tolist() == [1, 2]


def test_empty_integer_array_is_accepted() -> None:
    assert as_slot_array(np.array([], dtype=np.int32)).shape == (0,)


def test_input_is_not_mutated() -> None:
    slots = np.array([4, 2], dtype=np.int32)
    as_slot_array(slots)
    assert slots.dtype == np.int32
    assert slots.tolist() == [4, 2]


@pytest.mark.parametrize(
    "value",
    [[1, 2, 3], (1, 2), 3, 2.5, None, np.int64(4), "0,1"],
    ids=["list", "tuple", "int", "float", "None", "numpy-scalar", "str"],
)
def test_non_array_is_a_type_error(value: object) -> None:
    with pytest.raises(InvalidSlotsTypeError, match="slots must be a 1-D integer numpy array"):
        as_slot_array(value)


def test_type_error_is_also_builtin_type_error() -> None:
    with pytest.raises(TypeError):
        as_slot_array([0])
    with pytest.raises(RadixKVError):
        as_slot_array([0])


@pytest.mark.parametrize(
    "values",
    [
        np.array([0.0, 1.0]),
        np.array([True, False]),
        np.array([0, 1], dtype=object),
        np.array([1 + 0j]),
        np.array([], dtype=np.float64),
    ],
    ids=["float", "bool", "object", "complex", "empty-float"],
)
def test_non_integer_dtype_is_invalid_slots(values: np.ndarray[Any, Any]) -> None:
    with pytest.raises(InvalidSlotsError, match="integer dtype"):
        as_slot_array(values)


@pytest.mark.parametrize(
    "values",
    [np.array(5, dtype=np.int64), np.zeros((2, 2), dtype=np.int64)],
    ids=["0-d", "2-d"],
)
def test_wrong_shape_is_invalid_slots(values: np.ndarray[Any, Any]) -> None:
    with pytest.raises(InvalidSlotsError, match="must be 1-D"):
        as_slot_array(values)


def test_negative_id_is_invalid_and_named() -> None:
    with pytest.raises(InvalidSlotsError, match=r"slots\[2\] = -4 is negative"):
        as_slot_array(np.array([0, 1, -4, -5], dtype=np.int16))


def test_unsigned_id_beyond_int64_is_invalid() -> None:
    with pytest.raises(InvalidSlotsError, match="above 2\\*\\*63 - 1"):
        as_slot_array(np.array([1, 2**63], dtype=np.uint64))


def test_what_names_the_argument_in_messages() -> None:
    with pytest.raises(InvalidSlotsTypeError, match=r"^held must be"):
        as_slot_array([1], what="held")


def test_torch_like_object_is_converted_through_detach_cpu_numpy() -> None:
    tensor = FakeTensor(np.array([2, 3], dtype=np.int32))
    result = as_slot_array(tensor)
    assert tensor.calls == ["detach", "cpu", "numpy"]
    assert result.dtype == np.int64
    assert result.tolist() == [2, 3]


def test_torch_like_float_tensor_is_invalid_dtype() -> None:
    with pytest.raises(InvalidSlotsError, match="integer dtype"):
        as_slot_array(FakeTensor(np.array([1.0])))


def test_torch_object_that_is_not_a_tensor_is_a_type_error() -> None:
    with pytest.raises(InvalidSlotsTypeError, match="does not convert to numpy"):
        as_slot_array(FakeTorchThing())


def test_real_torch_tensors_are_accepted() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed (optional extra)")
    result = as_slot_array(torch.tensor([5, 6, 7], dtype=torch.int64))
    assert result.dtype == np.int64
    assert result.tolist() == [5, 6, 7]
    assert as_slot_array(torch.tensor([1, 2], dtype=torch.int32)).tolist() == [1, 2]
    strided = torch.arange(10, dtype=torch.int64)[::4]
    assert as_slot_array(strided).tolist() == [0, 4, 8]
    with pytest.raises(InvalidSlotsError, match="integer dtype"):
        as_slot_array(torch.tensor([1.0, 2.0]))
    with pytest.raises(InvalidSlotsError, match="integer dtype"):
        as_slot_array(torch.tensor([True]))
    with pytest.raises(InvalidSlotsError, match="must be 1-D"):
        as_slot_array(torch.zeros((2, 2), dtype=torch.int64))
    with pytest.raises(InvalidSlotsError, match="negative"):
        as_slot_array(torch.tensor([-1], dtype=torch.int64))


def test_page_table_rows_are_pages_read_only_and_shared() -> None:
    table = page_table(3, 4)
    assert table.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert not table.flags.writeable
    assert page_table(3, 4) is table
    assert page_table(4, 3) is not table
