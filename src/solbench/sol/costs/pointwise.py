"""Elementwise ops: per output element, vector FLOPs (an FMA counts 2) and special-function calls."""

from __future__ import annotations

from typing import Any

from solbench.sol.costs.base import FREE_OPS, RULES, Cost, elementwise_einsum, reads_all, vector_unit, writes_all
from solbench.sol.graph import OpNode

# packet -> (vector flops, special-function calls) per output element.
POINTWISE: dict[str, tuple[float, float]] = {}


def _table(flops: float, sfu: float, *packets: str) -> None:
    for packet in packets:
        POINTWISE[packet] = (flops, sfu)
        POINTWISE[packet + "_"] = (flops, sfu)  # the in-place form costs the same


# Arithmetic, comparison, selection: one operation each.
_table(1, 0, "add", "sub", "rsub", "mul", "neg", "abs", "relu", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac",
       "maximum", "minimum", "fmax", "fmin", "clamp", "clamp_min", "clamp_max", "clip", "eq", "ne", "lt", "le", "gt", "ge",
       "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
       "where", "masked_fill", "square", "threshold", "heaviside", "remainder", "fmod", "copysign", "isnan", "isinf",
       "isfinite", "isneginf", "isposinf", "nan_to_num", "signbit", "hardtanh", "relu6", "floor_divide", "bitwise_left_shift",
       "bitwise_right_shift", "__rshift__", "__lshift__", "__and__", "__or__", "__xor__", "__irshift__", "__ilshift__",
       "__iand__", "__ior__", "__ixor__")
_table(1, 1, "div", "true_divide")  # division goes through a reciprocal
_table(2, 0, "addcmul", "lerp", "leaky_relu", "hardsigmoid", "xlogy")
_table(2, 1, "addcdiv")
_table(3, 0, "hardswish", "hardshrink", "softshrink")
# Special functions: one SFU call, plus the vector work around it.
_table(1, 1, "exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "tanh", "erf",
       "erfc", "erfinv", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "log1p", "lgamma",
       "digamma")
_table(2, 2, "pow", "float_power", "atan2", "logaddexp", "logaddexp2", "softplus", "log_sigmoid_forward", "log_sigmoid")
_table(3, 1, "hypot")
_table(3, 1, "sigmoid", "logit")
_table(4, 1, "silu", "elu", "selu", "celu", "mish_inner")
_table(5, 1, "gelu")  # erf form; the tanh form costs the same order
_table(5, 3, "mish")
_table(3, 2, "sigmoid_backward", "tanh_backward")
_table(8, 2, "gelu_backward", "silu_backward")
_table(1, 0, "threshold_backward", "hardtanh_backward", "leaky_relu_backward", "le_backward")
# Data movement and RNG draws: no arithmetic worth counting beyond one op per element.
_table(0, 0, "_to_copy", "clone", "copy", "contiguous", "fill", "zero", "zeros_like", "ones_like", "full_like",
       "empty_like", "lift_fresh_copy", "_copy_from", "_copy_from_and_resize", "alias_copy", "masked_scatter")
_table(2, 1, "uniform", "normal", "bernoulli", "exponential", "random", "native_dropout", "rand_like", "randn_like")





def pointwise_cost(node: OpNode) -> Cost:
    flops, sfu = POINTWISE[node.packet]
    cost = Cost(reads=reads_all(node), writes=writes_all(node), einsum=elementwise_einsum(node))
    target = node.mutated[0] if node.mutated else node.outputs[0]
    elements = target.numel
    if node.packet.rstrip("_") in {"add", "sub", "mul"} and any(t.nonzero is not None for t in node.inputs):
        # with a mostly-zero operand (a gradient scattered into zeros) only its nonzero elements need work:
        # a kernel accumulates them into the other operand in place
        elements = min(elements, *(_nonzero_share(t, target) for t in node.inputs))
        cost.reads = [(t, elements * t.element_bits / 8) for t in node.inputs]
        cost.writes = [(target, elements * target.element_bits / 8)]
    if node.packet.rstrip("_") in {"pow"} and len(node.args) > 1 and isinstance(node.args[1], (int, float)) and float(node.args[1]).is_integer():
        flops, sfu = abs(float(node.args[1])) - 1 or 1, 0  # integer powers are repeated multiplies
    if node.packet.rstrip("_") in {"add", "sub"} and node.kwargs.get("alpha", 1) != 1:
        flops = 2  # a * alpha + b: one FMA
    if node.packet.rstrip("_") in {"div", "true_divide"} and _divides_by_a_number(node):
        sfu = 0  # by a scalar: a multiplication by its reciprocal, made once
    work_dtype = max((t.dtype for t in node.inputs if t.dtype is not None), key=lambda d: d.bits, default=target.dtype)
    if flops:
        cost.flops[vector_unit(work_dtype)] += flops * elements
    if sfu:
        cost.flops["sfu"] += sfu * elements
    if node.packet in {"copy_", "_copy_from"} and node.mutated:
        cost.reads = [(t, t.unique_bytes) for t in node.inputs if t is not node.mutated[0]]
    if node.packet in {"fill_", "zero_"}:
        cost.reads = [(t, t.unique_bytes) for t in node.inputs if t not in node.mutated]
    if node.packet in SHAPE_TEMPLATES:
        cost.reads = []  # the input gives a shape only: no kernel reads it (a read would also make its latency floor DRAM's)
        if node.packet == "empty_like":
            cost.writes = []
    return cost


SHAPE_TEMPLATES = {"zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like"}  # x_like(x): x's shape, not its values


def _nonzero_share(tensor: Any, target: Any) -> int:
    """The nonzero elements of an operand, counted in the (broadcast) output."""
    return tensor.nonzero_elements * max(1, target.numel // max(1, tensor.numel))


def _divides_by_a_number(node: OpNode) -> bool:
    """x / c with c a Python number or a tensor of one element."""
    divisor = node.args[1] if len(node.args) > 1 else None
    if isinstance(divisor, (int, float)):
        return True
    return len(node.inputs) > 1 and node.inputs[1].numel == 1


for _packet in POINTWISE:
    RULES[_packet] = pointwise_cost

# Ops that neither compute nor move data: allocations of uninitialised memory, metadata, RNG state.
FREE_OPS.update({"empty", "empty_strided", "new_empty", "new_empty_strided", "detach", "alias", "lift_fresh", "resolve_conj",
                 "resolve_neg", "_local_scalar_dense", "set_", "resize_", "_assert_async", "_assert_scalar",
                 "_functional_assert_async", "sym_constrain_range_for_size", "record_stream", "is_nonzero"})
