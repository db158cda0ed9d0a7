"""Bit-for-bit equality, whatever width its words are read at."""

from __future__ import annotations

import pytest
import torch

from solbench.bench.bits import _raw, _word_dtype, same_bits


@pytest.mark.parametrize("count, offset, width", [(64, 0, torch.int64), (68, 0, torch.int32), (66, 0, torch.int16), (67, 0, torch.uint8), (64, 1, torch.uint8), (64, 2, torch.int16)])
def test_every_byte_counts_at_every_width(count: int, offset: int, width: torch.dtype):
    base = torch.arange(count + offset, dtype=torch.uint8)
    a, b = base[offset:], base.clone()[offset:]
    assert _word_dtype((_raw(a), _raw(b))) == width
    assert same_bits(a, b)
    for position in (0, count // 2, count - 1):  # the first, a middle and the very last byte
        changed = base.clone()
        changed[offset + position] ^= 1
        assert not same_bits(a, changed[offset:])


def test_nan_equals_the_same_nan_and_signed_zeros_differ():
    x = torch.tensor([float("nan"), -0.0, 1.5], dtype=torch.bfloat16)
    assert same_bits(x, x.clone())
    assert not same_bits(x, torch.tensor([float("nan"), 0.0, 1.5], dtype=torch.bfloat16))


def test_shape_and_dtype_are_part_of_the_bits():
    x = torch.zeros(4, 2)
    assert not same_bits(x, torch.zeros(8)) and not same_bits(x, torch.zeros(4, 2, dtype=torch.int32))
    assert same_bits(torch.zeros(0, 3), torch.zeros(0, 3))
    codes = torch.tensor([[0x12, 0x88]], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    assert same_bits(codes, codes.clone()) and not same_bits(codes, torch.tensor([[0x12, 0x08]], dtype=torch.uint8).view(torch.float4_e2m1fn_x2))
    strided = torch.arange(12.0).reshape(3, 4).t()  # not contiguous: compared by its values' order
    assert same_bits(strided, strided.contiguous())
