"""Long Python loops over an axis (a recurrence over the sequence, one step per token): priced
from three short captures instead of one capture with thousands of steps.

When a reference's symbolic capture specialises on exactly one var axis (its loop count), the
problem is captured at three small values of that axis, a1 < a2 < a3 (the least published value
and its double and triple), with the other axes symbolic. These serve a workload with a longer loop
when (1) their graphs, at the workload's other axis values, grow only by repeating one block of ops
(the same ops on the same shapes: the loop body), in proportion to the axis, and (2) every total
of the bounds (FLOPs per unit, bytes, unfused time) is affine in the axis across the three. The
totals are then extended along that line: exact for a loop whose body does not change with the
step, and the result says it was extrapolated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from solbench.sol.graph import Graph
from solbench.data.problem import Problem
from solbench.data.workload import Workload

REL_TOLERANCE = 1e-6  # how far from a line the three totals may be (rounding only)
SHORT_PROBES = (8,)  # the first probes: 8, 16 and 24 steps (then the least published value and its double and triple)


@dataclass
class LoopEstimate:
    problem: Problem
    axis: str
    values: tuple[int, int, int]
    captures: list[Any]  # SymbolicCapture at each value
    rejected: set[tuple] = field(default_factory=set)  # other-axis values where the graphs did not repeat cleanly
    priced: dict[tuple, tuple] = field(default_factory=dict, repr=False)  # see _probe_totals

    def totals(self, workload: Workload, hardware: Any, policy: str) -> Any:
        """The extrapolated totals of this workload, or None where the estimate does not apply."""
        axes = self.problem.axes(workload)
        target = axes.get(self.axis)
        if target is None or target <= self.values[-1]:
            return None
        others = tuple(sorted((k, v) for k, v in axes.items() if k != self.axis))
        if others in self.rejected:
            return None
        probed = self._probe_totals(axes, others, hardware, policy)
        if probed is None:
            return None
        body, totals = probed
        estimate = extend(totals, self.values, target)
        if estimate is None:
            self.rejected.add(others)
            return None
        estimate.notes.insert(0, f"extrapolated along {self.axis} from captures at {self.axis} = {', '.join(map(str, self.values))}: "
                                 f"the loop body ({body} ops) repeats and every total is affine in {self.axis}")
        return estimate

    def _probe_totals(self, axes: dict[str, int], others: tuple, hardware: Any, policy: str) -> tuple[int, list[Any]] | None:
        """The loop body's length and the probes' totals at these other-axis values (None where a probe
        does not serve them or the graphs do not repeat cleanly). They depend on nothing else, so the
        workloads that share the other axes (and differ only along the loop axis) price the probes once."""
        from solbench.sol.pricing import graph_totals

        key = (others, id(hardware), policy)
        found = self.priced.get(key)
        if found is not None and found[0] is hardware:  # the spec kept with it: its id is not another's
            return found[1]
        graphs = []
        for value, made in zip(self.values, self.captures):
            probe = {**axes, self.axis: value}
            if not made.fits(probe):
                self.priced[key] = (hardware, None)
                return None
            graphs.append(made.concretize(probe))
        body = repeated_block(graphs)
        if body is None:
            self.rejected.add(others)
            return None
        totals = [graph_totals(g, hardware, policy) for g in graphs]
        for early in totals[:-1]:  # extend() reads the numbers of these two and nothing else: their per-op reports go
            early.reports = []
        self.priced[key] = (hardware, (body, totals))
        return body, totals


def plan(problem: Problem, workload: Workload, axis: str, decompose: Any) -> LoopEstimate | None:
    """Three short symbolic captures along `axis`, or None when the axis cannot be probed so."""
    published = sorted({w.axes[axis] for w in problem.workloads if axis in w.axes and w.axes[axis] >= 2})
    if not published:
        return None
    # short probes first (cheap); a loop over chunks of the axis needs probes of whole chunks: the least
    # probe that the definition's constraints allow, up to the least published value
    tried = 0
    for first in sorted({v for v in (*SHORT_PROBES, published[0]) if v <= published[0]}):
        if not all(_allowed(problem, workload, axis, v) for v in (first, 2 * first, 3 * first)):
            continue
        tried += 1
        if tried > 3:
            break
        values = (first, 2 * first, 3 * first)
        captures = _probes(problem, workload, axis, values, decompose)
        if captures is not None and _grows(problem, workload, axis, values, captures):
            return LoopEstimate(problem, axis, values, captures)
    return None


def _allowed(problem: Problem, workload: Workload, axis: str, value: int) -> bool:
    try:
        problem.axes(_with_axis(workload, axis, value))
    except Exception:  # noqa: BLE001 - a constraint the probe value breaks
        return False
    return True


def _probes(problem: Problem, workload: Workload, axis: str, values: tuple[int, int, int], decompose: Any) -> list[Any] | None:
    from solbench.sol.symbolic import capture_symbolic

    captures = []
    for value in values:
        probe = _with_axis(workload, axis, value)
        try:
            problem.axes(probe)  # constraints must hold at the probe values
            made = capture_symbolic(problem, probe, decompose)
        except Exception:  # noqa: BLE001 - no probe: no estimate
            return None
        if made.needs_values or made.pins_axes != [axis]:
            return None
        captures.append(made)
    return captures


def _grows(problem: Problem, workload: Workload, axis: str, values: tuple[int, int, int], captures: list[Any]) -> bool:
    """Whether the probes' graphs grow by whole loop bodies (at this workload's other axis values)."""
    axes = problem.axes(workload)
    try:
        graphs = [made.concretize({**axes, axis: value}) for value, made in zip(values, captures)]
    except Exception:  # noqa: BLE001 - sizes that do not evaluate here
        return False
    return repeated_block(graphs) is not None


def _with_axis(workload: Workload, axis: str, value: int) -> Workload:
    return workload.model_copy(update={"axes": {**workload.axes, axis: value}, "uuid": f"{workload.uuid}@{axis}={value}"})


def signature(graph: Graph) -> list[tuple]:
    return [(n.packet, tuple(t.shape for t in n.inputs), tuple(t.shape for t in n.outputs)) for n in graph.nodes]


def repeated_block(graphs: list[Graph]) -> int | None:
    """The length of the loop bodies when each graph is the previous one with copies of blocks of
    ops inserted (the same ops on the same shapes each time: a forward loop, and its backward loop
    after autograd), equally many and equally long between equally spaced probes; the ops around
    the loops may change their shapes with the axis. None otherwise."""
    signatures = [signature(g) for g in graphs]
    shapes = []
    for smaller, larger in zip(signatures, signatures[1:]):
        blocks = _insertions([s[0] for s in smaller], [s[0] for s in larger])
        if not blocks:
            return None
        periods = []
        for start, length in blocks:
            inserted = larger[start:start + length]
            period = _period(inserted)
            if period == len(inserted) and len(inserted) > 1:
                return None  # no repetition inside the inserted block: not one body repeated
            periods.append((period, length))
        shapes.append(periods)
    if shapes[0] != shapes[1]:  # the probes are equally spaced: the same bodies, grown by the same steps
        return None
    return sum(period for period, _ in shapes[0])


def _insertions(smaller: list[Any], larger: list[Any]) -> list[tuple[int, int]] | None:
    """Where blocks inserted into `smaller` give `larger`: (start in larger, length) of each; None
    when `larger` differs otherwise."""
    import difflib

    blocks = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, smaller, larger, autojunk=False).get_opcodes():
        if tag == "insert":
            blocks.append((j1, j2 - j1))
        elif tag != "equal":
            return None
    return blocks or None


def _period(block: list[tuple]) -> int:
    for length in range(1, len(block) + 1):
        if len(block) % length == 0 and block == block[:length] * (len(block) // length):
            return length
    return len(block)


def extend(totals: list[Any], values: tuple[int, int, int], target: int) -> Any | None:
    """Totals at `target` on the line through the three (None when they are not on one line, or fall)."""
    import copy

    first, second, third = totals

    def line(a: float, b: float, c: float) -> float | None:
        slope_ab = (b - a) / (values[1] - values[0])
        slope_bc = (c - b) / (values[2] - values[1])
        scale = max(abs(a), abs(b), abs(c), 1e-30)
        if abs(slope_ab - slope_bc) > REL_TOLERANCE * scale or slope_bc < -REL_TOLERANCE * scale:
            return None
        return c + slope_bc * (target - values[2])

    result = copy.copy(third)
    result.flops = {}
    for unit in set(first.flops) | set(second.flops) | set(third.flops):
        value = line(first.flops.get(unit, 0.0), second.flops.get(unit, 0.0), third.flops.get(unit, 0.0))
        if value is None:
            return None
        result.flops[unit] = value
    for name in third.ADDITIVE:
        value = line(getattr(first, name), getattr(second, name), getattr(third, name))
        if value is None or not math.isfinite(value):
            return None
        setattr(result, name, value)
    result.uncovered = sorted(set(first.uncovered) | set(second.uncovered) | set(third.uncovered))
    result.notes = list(third.notes)
    result.rate_notes = {**first.rate_notes, **second.rate_notes, **third.rate_notes}
    return result
