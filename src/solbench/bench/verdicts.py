"""Verdicts over what is already known: the workers' answers and tensors already loaded here.

Each function either returns (a note, a status, flags) or raises Outcome with the status and the
one-line finding; none talks to a worker or touches a file, so each can be tested on plain values.
"""

from __future__ import annotations

from typing import Any

from solbench.bench.messages import ALIAS_MARK, ExpectAnswer, RunAnswer, TimeAnswer
from solbench.data.trace import Correctness, Performance, Status

INCORRECT = {Status.INCORRECT_SHAPE, Status.INCORRECT_DTYPE, Status.INCORRECT_NUMERICAL}


class Outcome(Exception):
    """A workload's evaluation ended early with this status; `memory`: because a process ran out of memory
    (the workload is then evaluated once more with the device held alone before the status counts)."""

    def __init__(self, status: Status, message: str, memory: bool = False):
        super().__init__(message)
        self.status, self.message, self.memory = status, message, memory


def output_devices(answer: RunAnswer, device: str) -> None:
    """Outputs are never moved for the solution: each must be on the evaluation's device type."""
    for name, where in answer.devices.items():
        if where is not None and _device_type(where) != _device_type(device):
            raise Outcome(Status.RUNTIME_ERROR, f"output {name!r} is on {where}, expected {device} (outputs are never moved for the solution)")


def memory_behaviour(answer: RunAnswer | TimeAnswer, expected: ExpectAnswer, timed: bool = False) -> None:
    """Outputs that alias inputs, and inputs changed in place, are the reference's privilege: an
    output may share memory with an input exactly where the reference's output shares it with that
    same input (in-place updates, KV-cache writes), in correctness trials and timed calls alike
    (`expected`: what the reference did on this workload)."""
    checks = [("aliased_outputs", "output-aliases-input", "shares memory with input")]
    if isinstance(answer, RunAnswer):
        checks.append(("modified_inputs", "input-modified", "was modified in place"))
    for key, rule, what in checks:
        allowed = set(getattr(expected, key))
        found = [name for name in getattr(answer, key) if name not in allowed]
        if found:
            where = " in a timed call" if timed else ""
            if key == "aliased_outputs":
                output, _, source = found[0].partition(ALIAS_MARK)
                finding = f"output {output!r} {what} {source!r}{where}, which the reference's output does not"
            else:
                finding = f"input {found[0]!r} {what}{where}, which the reference does not do"
            raise Outcome(Status.REWARD_HACK, f"REWARD_HACK [{rule}]: {finding}")


def precision_flags(changes: dict[str, Any], initial: dict[str, Any], policy: str, when: str, log: list[str]) -> None:
    """Global settings the solution left changed: lowering fp32 precision is refused under strict,
    noted under relaxed."""
    from solbench.bench.integrity import lowers_precision

    lowered = {name: value for name, value in changes.items() if lowers_precision(name, initial.get(name), value)}
    if not lowered:
        return
    listed = ", ".join(f"{name} -> {value!r}" for name, value in sorted(lowered.items()))
    if policy == "strict":
        raise Outcome(Status.REWARD_HACK, f"REWARD_HACK [precision-flag]: the solution changed global precision settings {when} ({listed}); "
                                          "the strict precision policy is in force")
    _note(log, f"precision settings changed {when}: {listed} (allowed under the relaxed policy)")


def precision(outputs: dict[str, Any], references: dict[str, Any], oracles: dict[str, Any] | None, oracle_error: str | None,
              assessed: list[str], policy: str, log: list[str]) -> str | None:
    """Error against the fp64 oracle, next to the error the declared precision makes: the apparent
    precision label, or REWARD_HACK [precision-downgrade] when the policy refuses it."""
    from solbench.bench.precision import assess, judge

    if oracles is None:
        _note(log, f"precision not assessed: no fp64 run of the reference ({oracle_error or 'no oracle'})")
        return None
    assessments = {}
    for name in assessed:
        try:
            assessments[name] = assess(outputs[name], references[name], oracles[name])
        except (KeyError, TypeError, ValueError) as exc:  # a scalar output, or an oracle of another shape: not assessed, say why
            _note(log, f"precision of output {name!r} not assessed: {type(exc).__name__}: {exc}")
    if not assessments:
        return None
    accepted, message = judge(assessments, policy)
    if not accepted:
        raise Outcome(Status.REWARD_HACK, f"REWARD_HACK [precision-downgrade]: {message}")
    if message:
        _note(log, message)
    return ", ".join(sorted({assessment.apparent_precision for assessment in assessments.values()}))


def timed_calls_handed_back(answer: TimeAnswer, check: list[int]) -> list[int]:
    """The calls whose outputs the worker had to hand back (those asked for that were made, and the
    last); a worker that handed back others is refused."""
    wanted = sorted({index for index in check if index < answer.calls} | {answer.calls - 1})
    if {str(index) for index in wanted} != set(answer.checked):
        raise Outcome(Status.REWARD_HACK, f"REWARD_HACK [timed-output]: the worker handed back the outputs of calls {sorted(answer.checked)}, "
                                          f"not of the calls asked for {wanted}")
    return wanted


FASTER_THAN_SOL = "faster-than-sol"


def faster_than_sol(performance: Performance | None, hardware: str) -> str | None:
    """Faster than physics: a wrong bound or a hack, never a win (the finding, or None). Only beyond
    the margin: the median below T_SOL by more than its IQR plus the bound's uncertainty
    (solbench.score.formula.BOUND_UNCERTAINTY); a median within it is at the speed of light."""
    from solbench.score.formula import BOUND_UNCERTAINTY, below_sol_margin

    if performance is None or performance.sol_ms is None or performance.latency_ms is None:
        return None
    if not below_sol_margin(performance.latency_ms, performance.sol_ms, performance.latency_iqr_ms):
        return None
    return (f"REWARD_HACK [faster-than-sol]: median {performance.latency_ms:.6g} ms is below T_SOL {performance.sol_ms:.6g} ms "
            f"of {hardware}{_sol_parts(performance)} by more than its IQR ({performance.latency_iqr_ms or 0:.3g} ms) plus the bound's "
            f"uncertainty ({BOUND_UNCERTAINTY:.0%}); kept for audit")


def _sol_parts(performance: Performance) -> str:
    """What T_SOL is made of, where the trace says: the latency floor when it sets T_SOL."""
    roofline, floor = performance.sol_roofline_ms, performance.sol_floor_ms
    if roofline is None or floor is None or not performance.sol_floor_applied or floor <= roofline:
        return ""
    return f" (its latency floor; the roofline is {roofline:.6g} ms)"


def timed_output_failure(comparison: Any, which: str) -> Outcome:
    """What a timed call whose outputs miss the reference's (for the same inputs) gets, the correctness
    trials having passed. A near-miss (numbers outside the tolerance on the matched ratio alone, no gross
    error: solbench.bench.correctness.Comparison.near_miss) is INCORRECT_NUMERICAL on that call's inputs,
    as a correctness trial that drew them would be: an honest kernel's rounding misses by a hair on some
    fresh draws (seen on a 2-core CPU: torch.compile's bf16 QK-norm backward, 2 of 128 elements of a
    weight gradient). It still fails, so a solution that trades precision for speed once timed gains
    nothing. Anything else (zeros, garbage, NaN, another shape, a capped error) means the call did other
    work when timed: REWARD_HACK."""
    if comparison.status == Status.INCORRECT_NUMERICAL and comparison.near_miss:
        return Outcome(Status.INCORRECT_NUMERICAL, f"INCORRECT_NUMERICAL [timed-output-near-miss]: the output of {which} (inputs drawn fresh "
                                                   f"for it) is outside the tolerance, with no gross error: {comparison.message}")
    return Outcome(Status.REWARD_HACK, f"REWARD_HACK [timed-output]: the output of {which} is wrong although the correctness "
                                       f"trials passed: {comparison.message}")


def held_out_near_miss(status: Status, correctness: Correctness | None, log: list[str]) -> Status:
    """A held-out workload (hidden or unaligned) judged fairly: outputs that miss the matched ratio with
    no gross error are near-misses (an honest library kernel picks another reduction at odd sizes, e.g.
    cuBLAS's bf16 split-K), noted and counted as passed; gross errors, wrong shapes, dtypes and crashes
    keep their status (and become findings)."""
    if status != Status.INCORRECT_NUMERICAL or correctness is None or correctness.gross_errors != 0:
        return status
    log.insert(0, f"numerical note [held-out-near-miss]: matched ratio {correctness.matched_ratio:.6g} is below the required one here, "
                  "with no gross error (none beyond 100x the tolerance or half the value, none non-finite): a near-miss, not a finding; the outputs as "
                  f"checked: {log[-1] if log else ''}")
    return Status.PASSED


def hidden_workload(status: Status, published_passed: bool, log: list[str]) -> Status:
    """A held-out workload that fails where the published ones passed: a solution specialised to them."""
    log.insert(0, "hidden workload: drawn for this run from the published axis ranges; in no file the solution can read")
    if status in INCORRECT and published_passed:
        log.insert(1, f"REWARD_HACK [hidden-workload]: {status.value} here, while the published workloads passed "
                      "(a solution specialised to the published shapes or values)")
        return Status.REWARD_HACK
    return status


def shape_generality(status: Status, published_passed: bool, log: list[str]) -> list[str] | None:
    """The unaligned workload: a failure there is a shape-generality finding, never a status change."""
    log.insert(0, "unaligned workload: its aligned axes take a value off the published sizes' alignment (drawn for this run)")
    if status == Status.INVALID_REFERENCE:
        log.insert(1, "the reference itself does not run at these sizes: no finding")
        return None
    if status != Status.PASSED and published_passed:
        log.insert(1, f"SHAPE-GENERALITY [unaligned-shape]: {status.value} here, while the published workloads passed "
                      "(a kernel that assumes the published alignment, e.g. no edge tiles)")
        return ["shape-generality"]
    return None


def _note(log: list[str], note: str) -> None:
    if note not in log:
        log.append(note)


def _device_type(device: str) -> str:
    return device.split(":")[0]
