"""Capture the reference's aten ops on fake tensors: any size, no memory, no GPU.

The reference's `run` is called on FakeTensors made from the workload's declared shapes (custom
inputs included: only their shapes matter here). Ops whose output shape depends on data (nonzero,
masked_select, unique, boolean indexing) cannot run on fake tensors: then the capture is redone on
real CPU tensors from the workload's own input generation, and the graph's notes say why.
"""

from __future__ import annotations

import itertools
from typing import Any

from solbench.sol.graph import Graph, OpNode, TensorInfo
from solbench.spec.dtypes import DType, storage_shape
from solbench.spec.inputs import generate_inputs
from solbench.spec.problem import Problem
from solbench.spec.reference import reference_module
from solbench.spec.workload import ScalarInput, Workload

# Ops that only describe tensors (no data moves) and are left out of the graph.
_METADATA_OPS = {"prim.device.default", "aten.sym_size.int", "aten.sym_stride.int", "aten.sym_numel.default", "aten.is_same_size.default"}


class CaptureError(RuntimeError):
    pass


def capture(problem: Problem, workload: Workload, decompose: Any = None) -> Graph:
    """The op graph of the reference on this workload. `decompose(func) -> callable | None` lets
    the caller replace ops it has no cost rule for by their decompositions (recorded instead)."""
    import torch
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException, FakeTensorMode

    run = reference_module(problem.definition).run
    axes = problem.axes(workload)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            arguments = _fake_arguments(problem, workload, axes, mode)
            return _record(run, arguments, problem, decompose, "fake")
    except (DynamicOutputShapeException, DataDependentOutputException) as exc:
        reason = f"data-dependent op {exc.args[0] if exc.args else exc} needs real values"
    except NotImplementedError as exc:
        reason = f"an op has no fake-tensor support: {str(exc).splitlines()[0]}"
    real = generate_inputs(problem, workload, seed=0, device="cpu")
    with torch.no_grad():
        graph = _record(run, dict(real), problem, decompose, "real")
    graph.notes.insert(0, f"captured on real CPU tensors: {reason}")
    return graph


def _fake_arguments(problem: Problem, workload: Workload, axes: dict[str, int], mode: Any) -> dict[str, Any]:
    import torch

    arguments: dict[str, Any] = {}
    for name, declared in problem.definition.inputs.items():
        spec = workload.inputs[name]
        if declared.shape is None:
            value = spec.value if isinstance(spec, ScalarInput) else 0
            arguments[name] = float(value) if declared.dtype.is_floating else value
            continue
        shape = storage_shape(declared.dtype, declared.resolve_shape(axes))
        with mode:
            arguments[name] = torch.empty(shape, dtype=declared.dtype.torch_dtype())
    return arguments


def _record(run: Any, arguments: dict[str, Any], problem: Problem, decompose: Any, mode_name: str) -> Graph:
    import torch

    recorder = _Recorder(decompose)
    inputs = {name: recorder.info(value) for name, value in arguments.items() if isinstance(value, torch.Tensor)}
    for name, info in inputs.items():
        info.role, info.name = "input", name
    with torch.no_grad(), recorder:
        result = run(*arguments.values())
    results = result if isinstance(result, (tuple, list)) else (result,)
    names = list(problem.definition.outputs)
    if len(results) != len(names):
        raise CaptureError(f"run() returned {len(results)} value(s); the definition declares {len(names)} output(s)")
    outputs: dict[str, TensorInfo] = {}
    for name, value in zip(names, results):
        if not isinstance(value, torch.Tensor):
            raise CaptureError(f"run() returned a {type(value).__name__} for output {name!r}")
        info = recorder.info(value)
        if info.role != "input":
            info.role = "output"
        info.name = info.name or name
        outputs[name] = info
    return Graph(recorder.nodes, inputs, outputs, mode=mode_name)


# Composite functions recorded as one node, whatever backend the capture device would pick
# (on a CPU, SDPA may take a math path that upcasts bf16 to fp32 and would be priced as fp32 work).
# name -> parameter names, in the order the node's args keep them.
_WHOLE_FUNCTIONS = {
    "scaled_dot_product_attention": ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"),
}


class _Recorder:
    """A TorchDispatchMode that records every aten op with TensorInfos for its tensors (plus a
    TorchFunctionMode that records a few composite functions whole)."""

    def __init__(self, decompose: Any):
        import torch.nn.functional as functional
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                return recorder.dispatch(self, func, args, kwargs or {})

        whole = {getattr(functional, name): name for name in _WHOLE_FUNCTIONS}

        class FunctionMode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                kwargs = kwargs or {}
                if func in whole and not recorder._suppressed:
                    return recorder.record_whole(whole[func], func, args, kwargs)
                return func(*args, **kwargs)

        self.mode = Mode()
        self.function_mode = FunctionMode()
        self.decompose = decompose
        self.nodes: list[OpNode] = []
        self._infos: dict[int, tuple[Any, TensorInfo]] = {}  # id(tensor) -> (tensor kept alive, info)
        self._ids = itertools.count()
        self._decomposing: list[str] = []
        self._suppressed = 0

    def __enter__(self) -> _Recorder:
        self.function_mode.__enter__()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.mode.__exit__(*exc)
        self.function_mode.__exit__(*exc)

    def record_whole(self, name: str, func: Any, args: tuple, kwargs: dict) -> Any:
        import torch
        from torch.utils._pytree import tree_flatten

        self._suppressed += 1
        try:
            result = func(*args, **kwargs)
        finally:
            self._suppressed -= 1
        parameters = _WHOLE_FUNCTIONS[name]
        bound = dict(zip(parameters, args))
        bound.update({k: v for k, v in kwargs.items() if k in parameters})
        ordered = tuple(self.info(bound[p]) if isinstance(bound.get(p), torch.Tensor) else bound.get(p) for p in parameters)
        inputs = [a for a in ordered if isinstance(a, TensorInfo)]
        outputs = [self.info(t) for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]
        self.nodes.append(OpNode(len(self.nodes), f"torch.nn.functional.{name}", name, inputs, outputs, ordered, {}))
        return result

    def info(self, tensor: Any) -> TensorInfo:
        known = self._infos.get(id(tensor))
        if known is not None and known[0] is tensor:
            return known[1]
        try:
            dtype: DType | None = DType.from_torch(tensor.dtype)
            bits = dtype.bits
        except ValueError:
            dtype, bits = None, tensor.element_size() * 8
        storage = tensor.untyped_storage()
        packed = 2 if dtype is not None and dtype.is_packed else 1  # fp4 storage shape is halved
        shape = tuple(tensor.shape)
        if packed == 2 and shape:
            shape = (*shape[:-1], shape[-1] * 2)
            stride = tuple(s * 2 for s in tensor.stride()[:-1]) + (tensor.stride()[-1],)
        else:
            stride = tuple(tensor.stride())
        info = TensorInfo(
            next(self._ids), shape, stride, dtype, bits, storage._cdata, tensor.storage_offset(), storage.nbytes()
        )
        self._infos[id(tensor)] = (tensor, info)
        return info

    def dispatch(self, mode: Any, func: Any, args: tuple, kwargs: dict) -> Any:
        import torch
        from torch.utils._pytree import tree_flatten, tree_map

        name = str(func)
        if name in _METADATA_OPS or self._suppressed:
            return func(*args, **kwargs)
        if self.decompose is not None:
            replacement = self.decompose(func)
            if replacement is not None:
                self._decomposing.append(name)
                try:
                    with mode:
                        return replacement(*args, **kwargs)
                finally:
                    self._decomposing.pop()
        result = func(*args, **kwargs)
        flat_in = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        flat_out = [r for r in tree_flatten(result)[0] if isinstance(r, torch.Tensor)]
        if all(t.device.type == "meta" for t in flat_in + flat_out):
            return result  # meta tensors hold no data: building a module's structure costs nothing
        in_infos = [self.info(t) for t in flat_in]
        schema = getattr(func, "_schema", None)
        mutated = _mutated_arguments(schema, args, kwargs)
        out_infos = []
        for tensor in flat_out:
            existing = self._infos.get(id(tensor))
            out_infos.append(existing[1] if existing and existing[0] is tensor else self.info(tensor))
        is_view = bool(schema is not None and schema.returns and all(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns))
        to_info = lambda a: self.info(a) if isinstance(a, torch.Tensor) else a  # noqa: E731
        self.nodes.append(
            OpNode(
                len(self.nodes),
                name,
                name.split(".")[1] if name.count(".") >= 2 else name,
                in_infos,
                out_infos,
                tree_map(to_info, args),
                tree_map(to_info, kwargs),
                is_view=is_view,
                mutated=[self.info(t) for t in mutated],
                decomposed_from=self._decomposing[-1] if self._decomposing else None,
            )
        )
        return result


def _mutated_arguments(schema: Any, args: tuple, kwargs: dict) -> list[Any]:
    import torch

    if schema is None:
        return []
    found = []
    for index, argument in enumerate(schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[index] if index < len(args) else kwargs.get(argument.name)
        if isinstance(value, torch.Tensor):
            found.append(value)
    return found
