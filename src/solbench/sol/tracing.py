"""One call of a reference under a Recorder: its op graph with inputs and outputs named (the step
that every capture pass of solbench.sol.capture and solbench.sol.symbolic shares)."""

from __future__ import annotations

import logging
from typing import Any

from solbench.sol.graph import Graph, TensorInfo
from solbench.sol.recorder import Recorder
from solbench.data.problem import Problem
from solbench.data.workload import ScalarInput


class CaptureError(RuntimeError):
    pass



def record(run: Any, arguments: dict[str, Any], problem: Problem, decompose: Any, fake_mode: Any, mode_name: str, hint: Any = None,
           fixed: set[str] = frozenset(), stop_at_values: bool = False) -> Graph:
    """Run the reference under a Recorder and build its Graph (inputs and outputs named); the `fixed`
    inputs (real, the same at every seed) are constants whose values the analysis may read. With
    `stop_at_values` the capture ends with ValuesNeeded at the first sign that it needs the values."""
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)  # refusals are handled here, not logged
    recorder = Recorder(decompose, fake_mode, hint, stop_at_values)
    try:
        return _recorded(recorder, run, arguments, problem, fake_mode, mode_name, fixed)
    finally:
        recorder.release()  # its tensors and shadows go now, not at the garbage collector's next full pass


def _recorded(recorder: Recorder, run: Any, arguments: dict[str, Any], problem: Problem, fake_mode: Any, mode_name: str,
              fixed: set[str]) -> Graph:
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    if fake_mode is not None:  # real inputs (integers, custom ones) run as fake tensors whose shadows hold their values
        for name, value in list(arguments.items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, FakeTensor):
                arguments[name] = fake_mode.from_tensor(value, static_shapes=True)
                recorder.give_shadow(arguments[name], value)
    inputs = {name: recorder.info(value, constant=name in fixed) for name, value in arguments.items() if isinstance(value, torch.Tensor)}
    for name, info in inputs.items():
        info.role, info.name = "input", name
    with recorder:  # grad mode as the caller has it: backward problems differentiate inside run
        result = run(*arguments.values())
    results = result if isinstance(result, (tuple, list)) else (result,)
    declared = problem.definition.outputs
    if len(results) != len(declared):
        raise CaptureError(f"run() returned {len(results)} value(s); the definition declares {len(declared)} output(s)")
    outputs: dict[str, TensorInfo] = {}
    for (name, spec), value in zip(declared.items(), results):
        if not isinstance(value, torch.Tensor):
            if spec.shape is None:
                continue  # a Python number: no memory to count
            raise CaptureError(f"run() returned a {type(value).__name__} for output {name!r}")
        info = recorder.info(value)
        if info.role != "input":
            info.role = "output"
        info.name = info.name or name
        outputs[name] = info
    graph = Graph(recorder.nodes, inputs, outputs, notes=list(recorder.notes), mode=mode_name)
    graph.data_dependent = list(recorder.data_dependent)
    graph.value_sensitive = recorder.value_sensitive
    return graph



def scalar_value(declared: Any, spec: Any) -> Any:
    """A Python scalar input for the capture: its value, or a stand-in of its kind when it is drawn."""
    value = spec.value if isinstance(spec, ScalarInput) else (1 if not declared.dtype.is_floating else 0.5)
    if declared.dtype.is_floating:
        return float(value)
    if declared.dtype.value == "bool":
        return bool(value)
    return value
