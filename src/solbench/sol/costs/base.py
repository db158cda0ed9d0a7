"""What an op costs, and the registry of cost rules by aten op name."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from math import prod
from typing import Callable

from solbench.sol.graph import OpNode, TensorInfo
from solbench.data.dtypes import DType

# Execution units. tensor_*: contractions on the matrix units by operand dtype (tensor_fp32 is an
# fp32 contraction, priced by the precision policy); vector_*: the ALUs (vector_fp16 is 16-bit and
# 8-bit float math, packed two per lane); sfu: special functions (exp, log, rsqrt, sin, tanh, ...).
TENSOR_UNITS = ("tensor_fp64", "tensor_fp32", "tensor_tf32", "tensor_fp16", "tensor_bf16", "tensor_fp8", "tensor_fp4", "tensor_int8")
VECTOR_UNITS = ("vector_fp64", "vector_fp32", "vector_fp16", "vector_int32")
UNITS = TENSOR_UNITS + VECTOR_UNITS + ("sfu",)


@dataclass
class Contraction:
    """A matmul-like op, for the cache-aware bound: C[batch, M, N] += A[batch, M, K] B[batch, K, N]."""

    kind: str  # gemm | conv | attention
    batch: int
    m: int
    n: int
    k: int
    a_bytes: int  # bytes of A as stored (for a conv: the input image, not its im2col)
    b_bytes: int
    c_bytes: int
    element_bytes: tuple[float, float, float]  # per element of A, B, C
    extra_bytes: int = 0  # e.g. V of attention (streamed with K)


@dataclass
class Cost:
    flops: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    reads: list[tuple[TensorInfo, int]] = field(default_factory=list)
    writes: list[tuple[TensorInfo, int]] = field(default_factory=list)
    einsum: str = ""
    contraction: Contraction | None = None
    # For ops that must see a whole slice before writing any of it (softmax, norms): (tensor, slice bytes).
    two_pass_slice: tuple[TensorInfo, int] | None = None

    @property
    def bytes_read(self) -> int:
        return sum(b for _, b in self.reads)

    @property
    def bytes_written(self) -> int:
        return sum(b for _, b in self.writes)


Rule = Callable[[OpNode], Cost]
RULES: dict[str, Rule] = {}
FREE_OPS: set[str] = set()  # ops that move no data and compute nothing (metadata, allocation)


def rule(*packets: str) -> Callable[[Rule], Rule]:
    def register(function: Rule) -> Rule:
        for packet in packets:
            RULES[packet] = function
        return function

    return register


def vector_unit(dtype: DType | None) -> str:
    if dtype is None or dtype in (DType.float32,):
        return "vector_fp32"
    if dtype == DType.float64:
        return "vector_fp64"
    if dtype.is_floating:
        return "vector_fp16"
    return "vector_int32"


TENSOR_UNIT_BY_DTYPE = {
    DType.float64: "tensor_fp64",
    DType.float32: "tensor_fp32",
    DType.float16: "tensor_fp16",
    DType.bfloat16: "tensor_bf16",
    DType.float8_e4m3fn: "tensor_fp8",
    DType.float8_e5m2: "tensor_fp8",
    DType.float4_e2m1: "tensor_fp4",
    DType.int8: "tensor_int8",
    DType.uint8: "tensor_int8",
}


def tensor_unit(*dtypes: DType | None) -> str:
    """The matrix unit for a contraction of these operand dtypes (the widest operand decides)."""
    known = [DType.float4_e2m1 if d == DType.float4_e2m1fn_x2 else d for d in dtypes if d is not None]
    widest = max(known, key=lambda d: (d.bits, d.is_floating)) if known else DType.float32
    return TENSOR_UNIT_BY_DTYPE.get(widest, "tensor_fp32")


def operand_unit(*operands: TensorInfo) -> str:
    """The matrix unit for a contraction of these operands, by the precision of the values they hold
    (a bf16 tensor upcast to fp32 still holds bf16 values: bf16 tensor cores with fp32 accumulation
    compute the product exactly), not by the dtype that stores them."""
    return tensor_unit(*(t.value_format for t in operands))


def operand_bytes(tensor: TensorInfo) -> tuple[float, float]:
    """(bytes of the operand, bytes per element) as a kernel needs to hold it: at its value precision."""
    bits = tensor.element_bits
    if tensor.value_format is not None and tensor.value_format.bits < bits:
        ratio = tensor.value_format.bits / bits
        return tensor.unique_bytes * ratio, bits * ratio / 8
    return tensor.unique_bytes, bits / 8


def live_bytes(tensor: TensorInfo) -> float:
    """Bytes a kernel must touch of a tensor: all of it, or its nonzero part when it is known to be
    mostly zero (a gradient scattered into zeros): the rest needs neither reading nor writing."""
    if tensor.nonzero is None or tensor.numel == 0:
        return tensor.unique_bytes
    return tensor.unique_bytes * tensor.nonzero_elements / tensor.numel


def reads_all(node: OpNode) -> list[tuple[TensorInfo, int]]:
    """Every tensor argument read once, broadcast dims counted once."""
    return [(t, live_bytes(t)) for t in node.inputs]


def writes_all(node: OpNode) -> list[tuple[TensorInfo, int]]:
    if node.mutated:
        return [(t, live_bytes(t)) for t in node.mutated]
    return [(t, live_bytes(t)) for t in node.outputs]


def letters(rank: int, start: int = 0) -> str:
    return "abcdefghijklmnopqrstuvwxyz"[start : start + rank]


def elementwise_einsum(node: OpNode) -> str:
    out = node.outputs[0] if node.outputs else (node.mutated[0] if node.mutated else None)
    rank = len(out.shape) if out is not None else 0
    full = letters(rank)
    parts = [full[rank - len(t.shape) :] if len(t.shape) <= rank else letters(len(t.shape)) for t in node.inputs]
    return ",".join(parts) + "->" + full


def numel(shape: tuple[int, ...] | list[int]) -> int:
    return prod(shape)
