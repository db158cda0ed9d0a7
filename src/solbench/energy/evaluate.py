"""What the evaluator's trusted side does for the energy of one workload (solbench.bench.orchestrator
asks the worker and calls these): its own counter for the cross-check, the checks of the answer, E_SOL
and the trace's Energy record."""

from __future__ import annotations

from typing import Any

from solbench.data.trace import Energy
from solbench.energy.counter import METHOD
from solbench.energy.reading import forged, per_call
from solbench.energy.score import ENERGY_BOUND_UNCERTAINTY, below_energy_sol
from solbench.energy.window import Window

CHECK_SPAN = 10  # the calls among which the checked ones are drawn; the window makes at least this many
CHECKED_CALLS = 2  # calls of the window (besides the last) whose outputs are compared with the reference's


def windows_of(answer: Any) -> list[Window]:
    """The answer's windows in the order they were measured: idle, blank, calls, and the second blank where there is one."""
    return [Window(w.start_mj, w.end_mj, w.seconds, w.steps, tuple(tuple(u) for u in w.updates), w.covered_steps)  # type: ignore[misc]
            for w in (answer.idle, answer.blank, answer.loop, answer.blank_after) if w is not None]


def check_answer(answer: Any, before_mj: int, after_mj: int, elapsed_s: float, power_limit_w: float | None) -> str | None:
    """Why the worker's answer cannot be a true measurement (the finding), or None."""
    if answer.calls < 1 or answer.loop.steps != answer.calls:
        return f"the window of calls reports {answer.loop.steps} steps for {answer.calls} calls"
    if answer.blank_after is None:
        return "the answer has no second window of the calls' setup (the worker measures it after the calls)"
    for name in ("blank", "loop", "blank_after"):
        window = getattr(answer, name)
        if window is not None and window.covered_steps is not None and not 0 < window.covered_steps <= window.steps:
            return f"the {name} window claims {window.covered_steps:g} steps' time inside it, of the {window.steps} it ran"
    return forged(before_mj, after_mj, elapsed_s, windows_of(answer), power_limit_w)


def sol_energy(problem: Any, workload: Any, spec: Any, policy: str, captures: Any, floor: bool) -> tuple[float | None, str | None]:
    """E_SOL in joules on the spec, or None and why."""
    from solbench.energy.bound import bound_for_spec
    from solbench.sol.analysis import analyze

    if spec is None:
        return None, "no E_SOL: no hardware spec for this device"
    try:
        result = analyze(problem, workload, spec, policy, captures, floor)
    except Exception as exc:  # noqa: BLE001 - a missing bound must not lose the measurement
        return None, f"no E_SOL: the SOL analysis failed: {type(exc).__name__}: {str(exc)[:200]}"
    bound, note = bound_for_spec(result, spec)
    if bound is None:
        return None, note
    return bound.joules, "; ".join(bound.notes) or None


def record(answer: Any, sol_j: float | None, sol_note: str | None) -> tuple[Energy, list[str]]:
    """The trace's Energy of a checked answer, and the log lines it calls for."""
    reading = per_call(*windows_of(answer))
    energy = Energy(joules=reading.joules, sol_j=sol_j, mean_power_w=reading.mean_power_w, idle_power_w=reading.idle_power_w,
                    window_s=reading.window_s, calls=reading.calls, overhead_j=reading.overhead_j, resolution_j=reading.resolution_j,
                    method=METHOD)
    lines = []
    if sol_note:
        energy.note = sol_note
        lines.append(f"note [energy]: {sol_note}")
    if reading.joules <= reading.resolution_j:
        lines.append(f"note [energy]: the call's energy ({reading.joules:.3g} J) is within the measurement's resolution "
                     f"({reading.resolution_j:.3g} J per call): its setup (fresh inputs, L2 flush: {reading.overhead_j:.3g} J) dominates")
    if below_energy_sol(reading.joules, sol_j, reading.resolution_j):
        lines.append(f"note [below-energy-sol]: {reading.joules:.4g} J per call is below E_SOL {sol_j:.4g} J by more than the resolution "
                     f"({reading.resolution_j:.3g} J) plus the bound's uncertainty ({ENERGY_BOUND_UNCERTAINTY:.0%}): a wrong bound or a "
                     "forged reading; kept for audit")
    return energy, lines
