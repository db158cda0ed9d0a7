"""The dtypes a problem may declare, their sizes and their torch counterparts.

torch is imported lazily so that reading and validating problem files stays fast.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


class DType(str, Enum):
    float64 = "float64"
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float8_e4m3fn = "float8_e4m3fn"
    float8_e5m2 = "float8_e5m2"
    float4_e2m1 = "float4_e2m1"  # logical shapes; stored two per byte (the last dimension halved)
    float4_e2m1fn_x2 = "float4_e2m1fn_x2"  # PyTorch's packed fp4: physical shapes, one element = two e2m1 values
    int64 = "int64"
    int32 = "int32"
    int16 = "int16"
    int8 = "int8"
    uint8 = "uint8"
    bool = "bool"

    @property
    def bits(self) -> int:
        return _BITS[self]

    @property
    def is_floating(self) -> bool:
        return self in _FLOATING

    @property
    def is_packed(self) -> bool:
        """True for sub-byte dtypes stored several elements per byte (fp4: two per byte)."""
        return self.bits < 8

    @property
    def is_fp4(self) -> bool:
        """Either spelling of e2m1 fp4: logical (float4_e2m1) or packed pairs (float4_e2m1fn_x2)."""
        return self in (DType.float4_e2m1, DType.float4_e2m1fn_x2)

    @property
    def values_per_element(self) -> int:
        """e2m1 values one element of this dtype holds (two for the packed pair dtype)."""
        return 2 if self == DType.float4_e2m1fn_x2 else 1

    @property
    def integer_range(self) -> tuple[int, int]:
        """Least and greatest value of an integer (or bool) dtype."""
        if self == DType.bool:
            return 0, 1
        if self == DType.uint8:
            return 0, 255
        half = 1 << (self.bits - 1)
        return -half, half - 1

    def storage_bytes(self, logical_elements: int) -> int:
        """Bytes needed to store this many elements (packed dtypes round up to whole bytes)."""
        return (logical_elements * self.bits + 7) // 8

    def torch_dtype(self) -> torch.dtype:
        import torch

        return getattr(torch, _TORCH_NAME.get(self, self.value))

    @classmethod
    def from_torch(cls, dtype: torch.dtype) -> DType:
        name = str(dtype).removeprefix("torch.")
        for member, torch_name in _TORCH_NAME.items():
            if torch_name == name:
                return member
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"torch dtype {dtype} has no solbench counterpart") from None


_BITS = {
    DType.float64: 64,
    DType.float32: 32,
    DType.float16: 16,
    DType.bfloat16: 16,
    DType.float8_e4m3fn: 8,
    DType.float8_e5m2: 8,
    DType.float4_e2m1: 4,
    DType.float4_e2m1fn_x2: 8,
    DType.int64: 64,
    DType.int32: 32,
    DType.int16: 16,
    DType.int8: 8,
    DType.uint8: 8,
    DType.bool: 8,
}
_FLOATING = {
    DType.float64,
    DType.float32,
    DType.float16,
    DType.bfloat16,
    DType.float8_e4m3fn,
    DType.float8_e5m2,
    DType.float4_e2m1,
    DType.float4_e2m1fn_x2,
}
# Logical fp4 is stored as torch.float4_e2m1fn_x2: two values per byte, so its last dimension is
# halved. from_torch() maps that torch dtype back to logical fp4 (the first entry here).
_TORCH_NAME = {DType.float4_e2m1: "float4_e2m1fn_x2", DType.float4_e2m1fn_x2: "float4_e2m1fn_x2"}


def storage_shape(dtype: DType, logical_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The torch tensor shape that holds a tensor of this logical shape (fp4 packs its last dim)."""
    if not dtype.is_packed:
        return logical_shape
    if not logical_shape or logical_shape[-1] % 2:
        raise ValueError(f"a {dtype.value} tensor needs an even last dimension to pack two per byte, got shape {list(logical_shape)}")
    return (*logical_shape[:-1], logical_shape[-1] // 2)
