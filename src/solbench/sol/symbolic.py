"""One capture for many workloads: the reference run on fake tensors whose axis dims are symbols.

Each var or expression axis of at least 2 becomes a symbol of torch's ShapeEnv, with this
workload's value as its hint; sizes the reference computes become expressions of the symbols, and
every branch or specialisation it makes on them becomes a guard. Another workload reuses the
capture when its axis values are at least 2, meet every guard, and its scalar inputs are the same
(scalars are not symbolic: a top-k or a flag may change the graph). Concretising then evaluates
the recorded expressions at its axis values: no Python of the reference runs again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solbench.sol.graph import Graph, OpNode, TensorInfo
from solbench.data.problem import Problem
from solbench.data.workload import ScalarInput, Workload


class SymbolicUnsupported(RuntimeError):
    """The reference cannot be captured with symbolic sizes (it is then captured per workload)."""


@dataclass
class SymbolicCapture:
    graph: Graph  # sizes may be sympy expressions of the symbols
    symbols: dict[str, Any]  # axis name -> sympy symbol
    guards: list[Any]  # sympy booleans that must hold for the graph to be this workload's
    key: tuple  # the scalar inputs' values
    fixed: dict[str, int] = field(default_factory=dict)  # axes captured as plain numbers (0 or 1): a workload must match them
    needs_values: str | None = None  # why this capture cannot stand for the workloads' own (data, masks)
    pins_axes: list[str] = field(default_factory=list)  # axes a guard fixes to one value
    _cache: dict[tuple, Graph] = field(default_factory=dict, repr=False)

    def _values(self, axes: dict[str, int]) -> dict[Any, Any]:
        import sympy

        return {symbol: sympy.Integer(axes[name]) for name, symbol in self.symbols.items()}

    def fits(self, axes: dict[str, int]) -> bool:
        if any(axes.get(name, 0) < 2 for name in self.symbols) or any(axes.get(name) != value for name, value in self.fixed.items()):
            return False
        values = self._values(axes)
        for guard in self.guards:
            try:
                if not bool(guard.xreplace(values)):
                    return False
            except TypeError:  # a guard that does not evaluate to a truth value here
                return False
        return True

    def concretize(self, axes: dict[str, int]) -> Graph:
        """The graph at these axis values, every size an int."""
        key = tuple(sorted((name, axes[name]) for name in self.symbols))
        if key not in self._cache:
            self._cache.clear()  # one at a time: graphs are large and each workload is priced once
            self._cache[key] = concrete_graph(self.graph, self._values(axes))
        return self._cache[key]


def scalar_key(problem: Problem, workload: Workload) -> tuple:
    return tuple((name, spec.value) for name, spec in sorted(workload.inputs.items())
                 if isinstance(spec, ScalarInput) and name in problem.definition.inputs)


def capture_symbolic(problem: Problem, workload: Workload, decompose: Any = None, fake_cache: bool = False) -> SymbolicCapture:
    """The reference captured with symbolic axis sizes. FakeTensorMode's dispatch cache is off by
    default here: with symbolic sizes almost every op misses it, and building each entry (checking
    its outputs' symbolic sizes) costs as much as the op itself; the graph is the same either way."""
    import torch
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

    from solbench.sol.recorder import ValuesNeeded
    from solbench.sol.tracing import CaptureError, record, scalar_value
    from solbench.data.dtypes import DType
    from solbench.data.reference import reference_module

    run = reference_module(problem.definition).run
    axes = problem.axes(workload)
    definition = problem.definition
    shape_env = ShapeEnv(duck_shape=False)
    symbols: dict[str, Any] = {}
    sizes: dict[str, Any] = {}
    for name, axis in definition.axes.items():
        value = axes[name]
        if axis.type != "const" and value >= 2:
            source = ConstantSource(f"axis_{name}")
            symbol = shape_env.create_symbol(value, source=source, dynamic_dim=DimDynamic.DYNAMIC)
            symbols[name] = symbol
            sizes[name] = shape_env.create_symintnode(symbol, hint=value, source=source)
    hints = {symbol: axes[name] for name, symbol in symbols.items()}

    def hint(value: Any) -> int:
        return int(value.xreplace(hints)) if hasattr(value, "xreplace") else value

    mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
    mode.cache_enabled = mode.cache_enabled and fake_cache
    try:
        arguments: dict[str, Any] = {}
        for name, declared in definition.inputs.items():
            if declared.shape is None:
                arguments[name] = scalar_value(declared, workload.inputs[name])
                continue
            shape = [sizes.get(d, axes[d]) if isinstance(d, str) else d for d in declared.dims]
            if declared.dtype == DType.float4_e2m1 and shape:
                shape[-1] = shape[-1] // 2
            with mode:
                arguments[name] = torch.empty(shape, dtype=declared.dtype.torch_dtype())
        with mode:
            graph = record(run, arguments, problem, decompose, mode, "symbolic", hint, stop_at_values=True)
    except ValuesNeeded as stop:  # its graph would be thrown away: the workloads are captured with their values
        return SymbolicCapture(Graph([], {}, {}, mode="symbolic"), symbols, [], scalar_key(problem, workload), needs_values=stop.why)
    except CaptureError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure here only means: capture per workload
        raise SymbolicUnsupported(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}") from None
    guards = [g.expr for g in shape_env.guards]
    fixed = {name: axes[name] for name, axis in definition.axes.items() if axis.type != "const" and name not in symbols}
    made = SymbolicCapture(graph, symbols, guards, scalar_key(problem, workload), fixed)
    if graph.data_dependent:
        made.needs_values = f"data-dependent ops ({', '.join(sorted(set(graph.data_dependent)))}) need the workload's own values"
    elif graph.value_sensitive:
        made.needs_values = "a mask-like constant of symbolic size feeds the computation: its values are needed"
    made.pins_axes = sorted(name for name, symbol in symbols.items() if any(_pins(g, symbol) for g in guards))
    return made


def _pins(guard: Any, symbol: Any) -> bool:
    """Whether a guard fixes the symbol to one value (Eq(s, 256)), so the capture serves no other."""
    import sympy

    return isinstance(guard, sympy.Eq) and guard.free_symbols == {symbol}


def concrete_graph(graph: Graph, values: dict[Any, Any]) -> Graph:
    """A copy of the graph with every sympy size evaluated at these symbol values."""
    from solbench.sol.trees import map_leaves

    evaluated: dict[Any, int] = {}

    def number(value: Any) -> Any:
        if not hasattr(value, "xreplace"):
            return value
        found = evaluated.get(value)
        if found is None:
            result = value.xreplace(values)
            if not result.is_number:
                raise SymbolicUnsupported(f"size {value} does not evaluate at {values}")
            found = int(result) if result.is_integer else float(result)
            evaluated[value] = found
        return found

    infos: dict[int, TensorInfo] = {}

    def tensor(info: TensorInfo) -> TensorInfo:
        made = infos.get(info.id)
        if made is None:
            made = TensorInfo(
                info.id, tuple(number(d) for d in info.shape), tuple(number(s) for s in info.stride), info.dtype, info.element_bits,
                info.storage, number(info.storage_offset), number(info.storage_bytes), info.role, info.name, info.value_dtype,
                info.constant, info.values, number(info.independent), number(info.nonzero),
            )
            infos[info.id] = made
        return made

    def argument(value: Any) -> Any:
        return tensor(value) if isinstance(value, TensorInfo) else number(value)

    nodes = [
        OpNode(node.index, node.op, node.packet, [tensor(t) for t in node.inputs], [tensor(t) for t in node.outputs],
               map_leaves(argument, node.args), map_leaves(argument, node.kwargs), node.is_view, [tensor(t) for t in node.mutated],
               node.decomposed_from)
        for node in graph.nodes
    ]
    made = Graph(nodes, {n: tensor(t) for n, t in graph.inputs.items()}, {n: tensor(t) for n, t in graph.outputs.items()},
                 notes=list(graph.notes), mode="symbolic")
    return made
