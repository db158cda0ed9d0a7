"""What the evaluator's trusted side does for the energy of one workload (solbench.bench.orchestrator
asks the worker and calls these): its own counter for the cross-check, the checks of the answer, E_SOL
and the trace's Energy record."""

from __future__ import annotations

import dataclasses
from typing import Any

from solbench.data.trace import Energy
from solbench.energy.counter import METHOD
from solbench.energy.reading import forged, per_call
from solbench.energy.score import ENERGY_BOUND_UNCERTAINTY, below_energy_sol
from solbench.energy.window import Window

CHECK_SPAN = 10  # the calls among which the checked ones are drawn; the window makes at least this many
CHECKED_CALLS = 2  # calls of the window (besides the last) whose outputs are compared with the reference's
STEP_CALLS_S = 0.002  # a step holds calls of about this much GPU time together (at least one call)
BATCH_BYTES = 256 * 2**20  # and at most this much of their fresh inputs and outputs
AHEAD_BYTES = 2 * 2**30  # the most the inputs and outputs made ahead of a window of calls may take on the device


def batch_size(latency_s: float | None, bytes_per_call: int) -> int:
    """Calls per step of the energy window. A step's host work (its synchronisation, launches and the
    Python around them) runs at the GPU's static power and is only subtracted, not removed: for a call of
    a few microseconds it is most of the step, and the difference of the two windows is noise (2026-12-04,
    H200: a 20 us call read at 12-88 mJ, CV 53%). Calls of a step run back to back, each behind its own
    flush, so the host's share shrinks with the calls per step."""
    from solbench.bench.messages import MAX_ENERGY_BATCH

    if not latency_s or latency_s <= 0:
        return 1
    by_time = int(STEP_CALLS_S / latency_s)
    by_memory = BATCH_BYTES // max(1, bytes_per_call)
    return max(1, min(by_time, by_memory, MAX_ENERGY_BATCH))


def windows_of(answer: Any) -> list[Window]:
    """The answer's windows in the order they were measured: idle, blank, calls, and the second blank where there is one."""
    return [Window(w.start_mj, w.end_mj, w.seconds, w.steps, tuple(tuple(u) for u in w.updates), w.covered_steps)  # type: ignore[misc]
            for w in (answer.idle, answer.blank, answer.loop, answer.blank_after) if w is not None]


def check_answer(answer: Any, before_mj: int, after_mj: int, elapsed_s: float, power_limit_w: float | None, batch: int = 1) -> str | None:
    """Why the worker's answer cannot be a true measurement (the finding), or None (`batch`: the calls per step asked for)."""
    if answer.batch != batch:
        return f"the answer was measured with {answer.batch} calls per step, not the {batch} asked for"
    if answer.calls < 1 or answer.loop.steps * batch != answer.calls:
        return f"the window of calls reports {answer.loop.steps} steps for {answer.calls} calls ({batch} per step asked for)"
    if answer.inputs_ahead and answer.calls > answer.inputs_ahead:
        return f"the window of calls reports {answer.calls} calls on the inputs of {answer.inputs_ahead} calls made ahead"
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
    step = per_call(*windows_of(answer))  # per step of `answer.batch` calls
    reading = dataclasses.replace(step, joules=step.joules / answer.batch, overhead_j=step.overhead_j / answer.batch,
                                  resolution_j=step.resolution_j / answer.batch, calls=answer.calls)
    energy = Energy(joules=reading.joules, sol_j=sol_j, mean_power_w=reading.mean_power_w, idle_power_w=reading.idle_power_w,
                    window_s=reading.window_s, calls=reading.calls, calls_per_step=answer.batch, inputs_ahead=answer.inputs_ahead > 0,
                    overhead_j=reading.overhead_j,
                    resolution_j=reading.resolution_j, method=METHOD)
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
