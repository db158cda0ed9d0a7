"""The op cost registry: FLOPs per execution unit and bytes per tensor for each aten op."""

from solbench.sol.costs import contractions, memory, pointwise, reductions  # noqa: F401 - register the rules
from solbench.sol.costs.base import FREE_OPS, RULES, TENSOR_UNITS, UNITS, VECTOR_UNITS, Contraction, Cost

__all__ = ["FREE_OPS", "RULES", "TENSOR_UNITS", "UNITS", "VECTOR_UNITS", "Contraction", "Cost"]

