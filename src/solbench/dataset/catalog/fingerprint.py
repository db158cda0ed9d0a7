"""Graph equivalence: a fingerprint of a captured op graph that ignores names and constants.

Two problems are equivalent when their references run the same aten ops in the same order on the
same dataflow, with the same dtypes and the same *symbolic* shape structure. The fingerprint is a
hash of that structure with everything a copy would change removed:
- input, output and axis names: inputs are numbered in order, tensors in order of first use, and
  the symbols of var axes renamed s0, s1, ... in order of first appearance;
- constant axis values: every integer of 2 or more in a size (4096, or the 4096 of 4096*s0) is `k`;
  0 and 1 stay (an empty or broadcast dimension is structure, not a size);
- scalar constants: float arguments (eps, scales) are `f`, integer arguments outside [-4, 4] `k`
  (small ones stay: they are dims and flags).
A capture with symbolic sizes (solbench.sol.symbolic) gives the var-axis structure directly; for a
concrete capture, a size equal to a var axis's value at the captured workload stands for that axis.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from solbench.sol.graph import Graph, TensorInfo

SMALL_INT = 4
_INTEGER = re.compile(r"(?<![\w.])([2-9]|\d{2,})(?![\w.])")


class _Canon:
    def __init__(self, var_values: dict[int, str] | None):
        self.symbols: dict[str, str] = {}
        self.tensors: dict[int, str] = {}
        self.var_values = var_values or {}

    def symbol(self, name: str) -> str:
        return self.symbols.setdefault(name, f"s{len(self.symbols)}")

    def size(self, value: Any) -> Any:
        if hasattr(value, "free_symbols"):
            import sympy

            if value.is_number:
                return self.size(int(value)) if value.is_integer else "f"
            renamed = value.xreplace({s: sympy.Symbol(self.symbol(str(s))) for s in sorted(value.free_symbols, key=str)})
            return _INTEGER.sub("k", str(renamed))
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            if value in self.var_values:
                return self.symbol(self.var_values[value])
            return value if value < 2 else "k"
        return "f"

    def tensor(self, info: TensorInfo) -> list[Any]:
        token = self.tensors.setdefault(info.id, f"t{len(self.tensors)}")
        dtype = info.dtype.value if info.dtype is not None else f"bits{info.element_bits}"
        return [token, dtype, [self.size(d) for d in info.shape]]

    def argument(self, value: Any) -> Any:
        if isinstance(value, TensorInfo):
            return self.tensor(value)
        if isinstance(value, (list, tuple)):
            return [self.argument(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.argument(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return value
        if isinstance(value, int):
            return value if -SMALL_INT <= value <= SMALL_INT else "k"
        if isinstance(value, float):
            return "f"
        if hasattr(value, "free_symbols"):
            return self.size(value)
        text = str(value)
        return text if text.startswith("torch.") and "device" not in text else type(value).__name__


def graph_structure(graph: Graph, var_values: dict[int, str] | None = None) -> dict[str, Any]:
    """The canonical structure that the fingerprint hashes (useful to see why two graphs differ)."""
    canon = _Canon(var_values)
    inputs = [canon.tensor(info) for info in graph.inputs.values()]
    nodes = [[node.op, [canon.argument(a) for a in node.args], canon.argument(node.kwargs), [canon.tensor(t) for t in node.outputs]]
             for node in graph.nodes]
    outputs = [canon.tensor(info) for info in graph.outputs.values()]
    return {"inputs": inputs, "nodes": nodes, "outputs": outputs}


def graph_fingerprint(graph: Graph, var_values: dict[int, str] | None = None) -> str:
    """16 hex digits of the sha256 of graph_structure: equal for graphs equal up to names and constants.
    var_values (size -> var axis name) serves concrete captures; symbolic ones need none."""
    text = json.dumps(graph_structure(graph, var_values), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def concrete_var_values(axes: dict[str, int], var_axes: list[str]) -> dict[int, str]:
    """Sizes of a concrete capture that stand for var axes (values of 2 or more that only one var axis has)."""
    found: dict[int, list[str]] = {}
    for name in var_axes:
        if axes.get(name, 0) >= 2:
            found.setdefault(axes[name], []).append(name)
    return {value: names[0] for value, names in found.items() if len(names) == 1}
