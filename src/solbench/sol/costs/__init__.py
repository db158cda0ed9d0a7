"""The op cost registry: FLOPs per execution unit and bytes per tensor for each aten op."""

from solbench.sol.costs import contractions, memory, pointwise, reductions  # noqa: F401 - register the rules
from solbench.sol.costs.base import FREE_OPS, RULES, TENSOR_UNITS, UNITS, VECTOR_UNITS, Contraction, Cost

__all__ = ["FREE_OPS", "RULES", "TENSOR_UNITS", "UNITS", "VECTOR_UNITS", "Contraction", "Cost", "has_rule"]


def has_rule(packet: str) -> bool:
    return packet in RULES or packet in FREE_OPS
