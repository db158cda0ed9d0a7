"""Capture the reference's aten ops on fake tensors: any size, no memory, no GPU, once per problem.

`Captures(problem).graph(workload)` gives a workload's op graph with concrete sizes. The ways to
get it, the first that applies:

1. symbolic (solbench.sol.symbolic): fake inputs whose axis dims are symbols, so that one capture
   serves every workload whose axis values meet its guards (the branches and specialisations the
   reference made on sizes) and whose scalar inputs are the same; pricing a workload then only
   evaluates the recorded sizes. Not used when the reference's work depends on data (a
   data-dependent op) or on a mask-like constant whose size is symbolic: those need values.
2. concrete: fake tensors of this workload's sizes for floating inputs; integer, bool and custom
   inputs real (at most REAL_INPUT_BYTES), so that routing counts, page tables and lengths give
   exact sizes; constants (masks from shapes, decode tables) computed for real; data-dependent ops on
   fake values take their least result (solbench.sol.least). Custom inputs that the entry point makes
   without a random draw (seed_independent) are constants themselves, their values known (a packed
   sequence mask built from fixed lengths); such problems are never captured symbolically.
3. real: every input real, for a workload of at most REAL_CAPTURE_BYTES, when the concrete capture
   fails (a reference that reads values the fake tensors cannot give); the graph's notes say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from solbench.sol.graph import Graph
from solbench.sol.tracing import CaptureError, record, scalar_value
from solbench.data.dtypes import storage_shape
from solbench.data.inputs import custom_entry_draws, generate_inputs
from solbench.data.problem import Problem
from solbench.data.reference import reference_module
from solbench.data.workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Workload

REAL_INPUT_BYTES = 256 << 20  # integer, bool and custom inputs made real for a concrete capture, in all
REAL_CAPTURE_BYTES = 1 << 30  # the largest workload (inputs) ever captured on real tensors
MAX_SYMBOLIC = 8  # symbolic captures of one problem before each workload is captured on its own


def capture(problem: Problem, workload: Workload, decompose: Any = None) -> Graph:
    """The op graph of the reference on one workload."""
    return Captures(problem, decompose).graph(workload)


@dataclass
class Captures:
    """The captures of one problem, reused across its workloads where they fit."""

    problem: Problem
    decompose: Any = None
    symbolic: list[Any] = field(default_factory=list)
    concrete_only: str | None = None  # why symbolic captures are not (or no longer) tried
    captured: int = 0  # captures made (symbolic, concrete or real): what reuse saves is the rest
    loop_axis: str | None = None  # the one axis the reference specialises on (its loop count)
    loops: dict[tuple, Any] = field(default_factory=dict)  # LoopEstimates along loop_axis (False: none applies), by the axes at 0 or 1
    may_fix: bool | None = None  # whether custom inputs may be the same at every seed (a custom entry point that draws nothing)

    def graph(self, workload: Workload) -> Graph:
        from solbench.sol.symbolic import SymbolicUnsupported, capture_symbolic, scalar_key

        axes = self.problem.axes(workload)
        key = scalar_key(self.problem, workload)
        for made in self.symbolic:
            if made.key == key and made.fits(axes):
                return made.concretize(axes)
        if self.may_fix is None:  # once per problem: one call of its custom entry point, if it has one
            self.may_fix = not entry_draws(self.problem, workload)
            if self.may_fix and self.concrete_only is None and seed_independent(self.problem, workload, draws_checked=True):
                self.concrete_only = "no symbolic capture: inputs drawn the same at every seed shape the work by their values"
        if self.concrete_only is None and len(self.symbolic) < MAX_SYMBOLIC:
            try:
                made = capture_symbolic(self.problem, workload, self.decompose)
                self.captured += 1
            except SymbolicUnsupported as exc:
                self.concrete_only = f"no symbolic capture: {exc}"
            else:
                if made.needs_values:
                    self.concrete_only = made.needs_values
                else:
                    self.symbolic.append(made)
                    if len(made.pins_axes) == 1 and self.problem.definition.axes[made.pins_axes[0]].type == "var":
                        self.loop_axis = made.pins_axes[0]  # a loop count, most likely: see solbench.sol.loops
                    elif made.pins_axes:  # sizes the reference specialised on: other workloads get their own captures
                        self.concrete_only = f"the reference specialises on {', '.join(made.pins_axes)}"
                    return made.concretize(axes)
        self.captured += 1
        return capture_concrete(self.problem, workload, self.decompose, may_fix=self.may_fix)

    def totals(self, workload: Workload, hardware: Any, policy: str) -> Any:
        """The analysis totals of a workload: from its graph, or extrapolated along a loop axis."""
        from solbench.sol.pricing import graph_totals
        from solbench.sol.loops import plan

        if self.loop_axis is not None:
            # axes of 0 or 1 are numbers, not symbols, in a capture: each such set of values has probes of its own
            axes = self.problem.axes(workload)
            small = tuple(sorted((n, v) for n, v in axes.items() if v < 2 and n != self.loop_axis and self.problem.definition.axes[n].type != "const"))
            if small not in self.loops:
                self.loops[small] = plan(self.problem, workload, self.loop_axis, self.decompose) or False
                self.captured += 3
                if self.loops[small]:
                    self.symbolic += self.loops[small].captures  # workloads at the probe values use them directly
            if self.loops[small]:
                estimate = self.loops[small].totals(workload, hardware, policy)
                if estimate is not None:
                    return estimate
        return graph_totals(self.graph(workload), hardware, policy)


def capture_concrete(problem: Problem, workload: Workload, decompose: Any = None, may_fix: bool | None = None) -> Graph:
    """Passes 2 and 3 of the module docstring for one workload (`may_fix` False: the problem's custom
    entry point is known to draw at random, so no input is a constant)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    run = reference_module(problem.definition).run
    axes = problem.axes(workload)
    real = _real_inputs(problem, workload, axes)
    fixed = seed_independent(problem, workload, real, draws_checked=may_fix is True) if may_fix is not False else set()
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            arguments = _arguments(problem, workload, axes, mode, real)
            graph = record(run, arguments, problem, decompose, mode, "fake", fixed=fixed)
            if fixed:
                graph.notes.append(f"input(s) {', '.join(sorted(fixed))} drawn the same at every seed (a custom entry point without "
                                   "random draws): constants of the workload, their values known")
            return graph
    except CaptureError:
        raise
    except Exception as exc:  # noqa: BLE001 - the last resort below says why
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
    size = input_bytes(problem, workload, axes)
    if size > REAL_CAPTURE_BYTES:
        raise CaptureError(f"the reference cannot run on fake tensors ({reason}) and its inputs ({size / 2**20:.0f} MiB) are too large "
                           f"to run it on real ones (at most {REAL_CAPTURE_BYTES >> 20} MiB)")
    values = generate_inputs(problem, workload, seed=0, device="cpu")
    graph = record(run, values, problem, decompose, None, "real")
    graph.notes.insert(0, f"captured on real CPU tensors ({size / 2**20:.1f} MiB of inputs): {reason}")
    return graph


def _real_inputs(problem: Problem, workload: Workload, axes: dict[str, int]) -> dict[str, Any]:
    """Integer, bool and custom inputs (and what safetensors files hold of them), made real when small."""
    wanted: set[str] = set()
    size = 0
    for name, declared in problem.definition.inputs.items():
        spec = workload.inputs[name]
        if declared.shape is None or isinstance(spec, ScalarInput):
            continue
        floating = declared.dtype.is_floating
        if isinstance(spec, CustomInput) or (not floating and isinstance(spec, (RandomInput, SafetensorsInput))):
            wanted.add(name)
            size += declared.dtype.storage_bytes(math.prod(declared.resolve_shape(axes)))
    custom = {n for n in wanted if isinstance(workload.inputs[n], CustomInput)}
    if size > REAL_INPUT_BYTES:
        wanted -= custom  # the custom entry point makes them all at once: left fake when too big
        size = sum(problem.definition.inputs[n].dtype.storage_bytes(math.prod(problem.definition.inputs[n].resolve_shape(axes))) for n in wanted)
        if size > REAL_INPUT_BYTES:
            return {}
    return generate_inputs(problem, workload, seed=0, device="cpu", only=wanted) if wanted else {}


def entry_draws(problem: Problem, workload: Workload) -> bool:
    """Whether the problem's custom entry point draws at random (True also where there are no tensors it makes)."""
    declared, axes = problem.definition.inputs, problem.axes(workload)
    made = [declared[name] for name, spec in workload.inputs.items() if name in declared and isinstance(spec, CustomInput) and declared[name].shape is not None]
    if not made or sum(spec.dtype.storage_bytes(math.prod(spec.resolve_shape(axes))) for spec in made) > REAL_INPUT_BYTES:
        return True  # nothing it makes, or too much to make here (such inputs are not made real either)
    return custom_entry_draws(problem, workload)


def seed_independent(problem: Problem, workload: Workload, real: dict[str, Any] | None = None, draws_checked: bool = False) -> set[str]:
    """The custom inputs (made real here) that the problem's entry point makes the same at every seed
    (no random draw: lengths in fixed ratios, a table of the axes): an entry point that draws from no
    random generator, whose inputs drawn at two seeds are equal.
    Their values are then constants of the workload, which a bound may use (the mask they build).
    `draws_checked`: the caller has found already that the entry point draws nothing."""
    import torch

    if not draws_checked and entry_draws(problem, workload):  # the usual case, and the cheap test: one call of the entry point
        return set()
    if real is None:
        real = _real_inputs(problem, workload, problem.axes(workload))
    custom = {name for name in real if isinstance(workload.inputs[name], CustomInput)}
    if not custom:
        return set()
    again = generate_inputs(problem, workload, seed=1, device="cpu", only=custom)
    return {name for name in custom if isinstance(real[name], torch.Tensor) and isinstance(again.get(name), torch.Tensor)
            and real[name].dtype == again[name].dtype and real[name].shape == again[name].shape and torch.equal(real[name], again[name])}


def _arguments(problem: Problem, workload: Workload, axes: dict[str, int], mode: Any, real: dict[str, Any]) -> dict[str, Any]:
    import torch

    arguments: dict[str, Any] = {}
    for name, declared in problem.definition.inputs.items():
        spec = workload.inputs[name]
        if name in real:
            arguments[name] = real[name]
        elif declared.shape is None:
            arguments[name] = scalar_value(declared, spec)
        else:
            shape = storage_shape(declared.dtype, declared.resolve_shape(axes))
            with mode:
                arguments[name] = torch.empty(shape, dtype=declared.dtype.torch_dtype())
    return arguments


def input_bytes(problem: Problem, workload: Workload, axes: dict[str, int]) -> int:
    """Bytes of the workload's tensor inputs, from their declared shapes and dtypes."""
    return sum(spec.dtype.storage_bytes(math.prod(spec.resolve_shape(axes))) for spec in problem.definition.inputs.values() if spec.shape is not None)
