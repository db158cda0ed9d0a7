"""The captured op graph: aten ops with the tensors they read and write."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any

from solbench.data.dtypes import DType

EXACT_FORMAT_ELEMENTS = 1 << 16  # constants up to this size get their value precision from their values (decode tables)


@dataclass
class TensorInfo:
    """One tensor seen during capture (a view has its own TensorInfo, sharing the storage id)."""

    id: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: DType | None  # None for dtypes solbench does not model (complex, ...)
    element_bits: int
    storage: int  # identity of the underlying storage
    storage_offset: int
    storage_bytes: int
    role: str = "intermediate"  # input | output | intermediate
    name: str | None = None  # the problem input / output it is, if any
    value_dtype: DType | None = None  # the narrowest format that holds its values exactly (solbench.sol.values); None: its dtype
    constant: bool = False  # depends on no problem input (masks built from shapes, decode tables)
    values: Any = field(default=None, repr=False, compare=False)  # the real values of a small constant, when known
    independent: Any = None  # how many independent values it holds (a broadcast or repeated scale holds few); None: numel
    nonzero: Any = None  # at most this many nonzero elements (zeros, and gradients scattered into them); None: numel

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def value_format(self) -> DType | None:
        """What a kernel needs to hold its values: the value precision, else the dtype (for a constant
        with known values, the narrowest format that holds them, found on first use)."""
        if self.value_dtype is None and self.values is not None and self.dtype is not None and self.dtype.is_floating \
                and self.values.numel() <= EXACT_FORMAT_ELEMENTS:
            from solbench.sol.values import exact_format

            self.value_dtype = exact_format(self.values) or self.dtype
        return self.value_dtype or self.dtype

    @property
    def independent_values(self) -> int:
        return self.numel if self.independent is None else self.independent

    @property
    def nonzero_elements(self) -> int:
        return self.numel if self.nonzero is None else min(self.nonzero, self.numel)

    @property
    def nbytes(self) -> int:
        """Bytes of the logical tensor (every element once)."""
        return (self.numel * self.element_bits + 7) // 8

    @property
    def unique_bytes(self) -> int:
        """Bytes of distinct memory the tensor covers: broadcast (stride-0) dims count once."""
        distinct = prod(size for size, step in zip(self.shape, self.stride) if step != 0 or size == 0)
        return min((distinct * self.element_bits + 7) // 8, self.storage_bytes or distinct * self.element_bits // 8)


@dataclass
class OpNode:
    """One aten op call."""

    index: int
    op: str  # e.g. "aten.mm.default"
    packet: str  # e.g. "mm"
    inputs: list[TensorInfo]  # tensor arguments, flattened, in order
    outputs: list[TensorInfo]
    args: tuple[Any, ...]  # the call's arguments with tensors replaced by their TensorInfo
    kwargs: dict[str, Any]
    is_view: bool = False  # every output aliases an input: no memory traffic
    mutated: list[TensorInfo] = field(default_factory=list)  # inputs written in place
    decomposed_from: str | None = None  # the op whose decomposition produced this node


@dataclass
class Graph:
    nodes: list[OpNode]
    inputs: dict[str, TensorInfo]  # problem input name -> tensor (tensors only)
    outputs: dict[str, TensorInfo]
    notes: list[str] = field(default_factory=list)  # how the capture was made, fallbacks with reasons
    mode: str = "fake"  # fake | real | symbolic
    data_dependent: list[str] = field(default_factory=list)  # ops whose sizes or values depend on data
    value_sensitive: bool = False  # a mask-like constant of unknown values fed input-dependent work
