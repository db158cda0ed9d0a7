"""DType: torch counterparts, sizes and packed storage."""

from __future__ import annotations

import pytest
import torch

from solbench.data.dtypes import DType, storage_shape

TORCH = {
    DType.float64: torch.float64,
    DType.float32: torch.float32,
    DType.float16: torch.float16,
    DType.bfloat16: torch.bfloat16,
    DType.float8_e4m3fn: torch.float8_e4m3fn,
    DType.float8_e5m2: torch.float8_e5m2,
    DType.float4_e2m1: torch.float4_e2m1fn_x2,
    DType.float4_e2m1fn_x2: torch.float4_e2m1fn_x2,
    DType.int64: torch.int64,
    DType.int32: torch.int32,
    DType.int16: torch.int16,
    DType.int8: torch.int8,
    DType.uint8: torch.uint8,
    DType.bool: torch.bool,
}
BITS = {
    DType.float64: 64,
    DType.float32: 32,
    DType.float16: 16,
    DType.bfloat16: 16,
    DType.float8_e4m3fn: 8,
    DType.float8_e5m2: 8,
    DType.float4_e2m1: 4,
    DType.float4_e2m1fn_x2: 8,  # one element: a byte holding two e2m1 values
    DType.int64: 64,
    DType.int32: 32,
    DType.int16: 16,
    DType.int8: 8,
    DType.uint8: 8,
    DType.bool: 8,
}


def test_the_design_lists_exactly_these_dtypes():
    assert {d.value for d in DType} == {
        "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1", "float4_e2m1fn_x2",
        "int64", "int32", "int16", "int8", "uint8", "bool",
    }
    assert set(TORCH) == set(DType)


@pytest.mark.parametrize("dtype", list(DType), ids=lambda d: d.value)
def test_torch_dtype_and_back(dtype: DType):
    assert dtype.torch_dtype() is TORCH[dtype]
    # torch's packed fp4 maps back to the logical spelling (the one solbench's analysis reasons in)
    assert DType.from_torch(TORCH[dtype]) is (DType.float4_e2m1 if dtype.is_fp4 else dtype)
    assert DType(dtype.value) is dtype
    assert dtype == dtype.value  # a str enum: compares equal to its JSON spelling


@pytest.mark.parametrize("dtype", list(DType), ids=lambda d: d.value)
def test_bits_agree_with_torch_storage(dtype: DType):
    assert dtype.bits == BITS[dtype]
    element_bits = torch.empty(0, dtype=TORCH[dtype]).element_size() * 8
    if dtype.is_packed:
        assert element_bits == 2 * dtype.bits  # one torch element holds two fp4 values
    else:
        assert element_bits == dtype.bits


def test_is_floating_and_is_packed():
    floating = {d for d in DType if d.is_floating}
    assert floating == {
        DType.float64, DType.float32, DType.float16, DType.bfloat16,
        DType.float8_e4m3fn, DType.float8_e5m2, DType.float4_e2m1, DType.float4_e2m1fn_x2,
    }
    for dtype in DType:
        assert dtype.is_floating == TORCH[dtype].is_floating_point or dtype.is_fp4
    assert [d for d in DType if d.is_packed] == [DType.float4_e2m1]  # the packed pair dtype has physical shapes
    assert [d for d in DType if d.is_fp4] == [DType.float4_e2m1, DType.float4_e2m1fn_x2]
    assert DType.float4_e2m1fn_x2.values_per_element == 2 and DType.float4_e2m1.values_per_element == 1


@pytest.mark.parametrize("torch_dtype", [torch.complex64, torch.uint16, torch.uint32, torch.float8_e4m3fnuz, torch.qint8])
def test_from_torch_rejects_dtypes_without_counterpart(torch_dtype: torch.dtype):
    with pytest.raises(ValueError, match="no solbench counterpart"):
        DType.from_torch(torch_dtype)


@pytest.mark.parametrize(
    ("dtype", "elements", "expected"),
    [
        (DType.float4_e2m1, 0, 0),
        (DType.float4_e2m1, 1, 1),  # rounds up to a whole byte
        (DType.float4_e2m1, 2, 1),  # two per byte
        (DType.float4_e2m1, 3, 2),
        (DType.float4_e2m1, 4, 2),
        (DType.float4_e2m1, 1001, 501),
        (DType.float4_e2m1fn_x2, 1001, 1001),  # physical elements: one byte each
        (DType.float32, 3, 12),
        (DType.float64, 3, 24),
        (DType.bfloat16, 5, 10),
        (DType.float16, 0, 0),
        (DType.float8_e5m2, 7, 7),
        (DType.bool, 5, 5),  # bool is stored one per byte
        (DType.int64, 2, 16),
        (DType.uint8, 9, 9),
    ],
)
def test_storage_bytes(dtype: DType, elements: int, expected: int):
    assert dtype.storage_bytes(elements) == expected


@pytest.mark.parametrize("dtype", [d for d in DType if not d.is_packed], ids=lambda d: d.value)
def test_storage_bytes_matches_a_real_tensor(dtype: DType):
    tensor = torch.zeros(3, 5, dtype=TORCH[dtype])
    assert dtype.storage_bytes(tensor.numel()) == tensor.numel() * tensor.element_size()


def test_storage_bytes_of_fp4_matches_a_real_packed_tensor():
    tensor = torch.zeros(3, 4, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)  # logical 3 x 8
    assert DType.float4_e2m1.storage_bytes(3 * 8) == tensor.numel() * tensor.element_size() == 12
    assert DType.float4_e2m1fn_x2.storage_bytes(3 * 4) == 12  # the same tensor in its physical shape
    assert storage_shape(DType.float4_e2m1fn_x2, (3, 4)) == (3, 4)


def test_storage_shape_packs_the_last_dimension_of_fp4():
    assert storage_shape(DType.float4_e2m1, (4, 6)) == (4, 3)
    assert storage_shape(DType.float4_e2m1, (2,)) == (1,)
    assert storage_shape(DType.float4_e2m1, (2, 3, 8)) == (2, 3, 4)
    assert storage_shape(DType.float4_e2m1, (5, 0)) == (5, 0)


@pytest.mark.parametrize("shape", [(5,), (4, 7), (1,), ()])
def test_storage_shape_rejects_an_odd_or_missing_last_dimension_for_fp4(shape: tuple[int, ...]):
    with pytest.raises(ValueError, match="even last dimension"):
        storage_shape(DType.float4_e2m1, shape)


@pytest.mark.parametrize("dtype", [d for d in DType if not d.is_packed], ids=lambda d: d.value)
def test_storage_shape_is_the_logical_shape_for_unpacked_dtypes(dtype: DType):
    assert storage_shape(dtype, (4, 7)) == (4, 7)
    assert storage_shape(dtype, ()) == ()
    assert storage_shape(dtype, (3,)) == (3,)
