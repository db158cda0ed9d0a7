"""What a proposer is told after an attempt: the status and the evaluator's message, per published
workload its latency, T/T_SOL and score, the static audit's findings, and of the held-out workloads
only how many there were and whether all passed (never their uuids, axes or messages, which would tell
their shapes)."""

from __future__ import annotations

from solbench.data.hidden import is_held_out
from solbench.data.solution import Solution
from solbench.data.trace import Status, Trace
from solbench.optimize.assess import Assessment
from solbench.optimize.messages import (NO_SOLUTION, AttemptFeedback, AuditFinding, HeldOutResult, MemcheckFeedback, ProfileFeedback,
                                       WorkloadResult)

MESSAGE_LIMIT = 2000  # characters of the evaluator's message per workload
HELD_OUT_FAILED = ("the solution fails on held-out workloads: shapes (and scalars) drawn from the published axis ranges at evaluation "
                   "time; they are not disclosed. A solution specialised to the published workloads is REWARD_HACK there")


def audit_findings(solution: Solution, policy: str) -> list[AuditFinding]:
    """The static analysis' findings on the solution's sources (what `solbench audit` prints)."""
    from solbench.bench.guards.static import analyze_solution

    return [AuditFinding(rule=f.rule, severity=f.severity, path=f.path, line=f.line, message=f.message)
            for f in analyze_solution(solution, policy)]


def attempt_feedback(attempt: int, solution: Solution, traces: list[Trace], assessment: Assessment, audit: list[AuditFinding]) -> AttemptFeedback:
    """The feedback on an evaluated attempt (the traces' held-out workloads are summarised, not shown)."""
    published = {t.workload.uuid: t for t in traces if not is_held_out(t.workload.uuid)}
    results = []
    for row in assessment.rows:
        trace = published[row.workload]
        passed = row.status == Status.PASSED.value
        ratio = row.latency_ms / row.sol_ms if row.latency_ms is not None and row.sol_ms else None
        results.append(WorkloadResult(uuid=row.workload, status=row.status, latency_ms=row.latency_ms, sol_ms=row.sol_ms, ratio_to_sol=ratio,
                                      baseline_ms=row.baseline_ms, score=row.score,
                                      message="" if passed else _clip(trace.evaluation.log if trace.evaluation else "")))
    failed = next((r for r in results if r.status != Status.PASSED.value), None)
    held_ok = all(t.evaluation.status == Status.PASSED for t in assessment.held_out)
    note = HELD_OUT_FAILED if not held_ok and failed is None else ""  # a published failure says more than a held-out one
    held_out = HeldOutResult(checked=len(assessment.held_out), passed=held_ok, note=note) if assessment.held_out else None
    if failed is not None:
        status, message = failed.status, f"{failed.uuid}: {failed.message}"
    elif not held_ok:
        status = next(t.evaluation.status.value for t in assessment.held_out if t.evaluation.status != Status.PASSED)
        message = HELD_OUT_FAILED
    else:
        status, message = Status.PASSED.value, assessment.why_not
    return AttemptFeedback(attempt=attempt, solution=solution.name, status=status, message=message, score=assessment.score, workloads=results,
                           held_out=held_out, audit=audit, memcheck=memcheck_feedback(traces))


def memcheck_feedback(traces: list[Trace]) -> MemcheckFeedback | None:
    """The sanitizer's verdict (`--memcheck`: the same on every trace of the attempt), None where it did not run."""
    record = next((t.evaluation.environment["memcheck"] for t in traces
                   if t.evaluation is not None and isinstance((t.evaluation.environment or {}).get("memcheck"), dict)), None)
    if record is None:
        return None
    return MemcheckFeedback(tool=record.get("tool", "memcheck"), clean=record.get("result") == "clean", first_report=record.get("first_report"),
                            result=record.get("result"), line=record.get("line"), seconds=record.get("seconds"))


def profile_feedback(report: object) -> ProfileFeedback:
    """The profile document (solbench.profile) as the proposer sees it: per kernel rows, the gap factors, notes."""
    document = report.model_dump(mode="json")  # type: ignore[attr-defined]
    return ProfileFeedback(kernels=document.get("kernels", []), gap=document.get("gap", {}), workload=document.get("workload"),
                           sol=document.get("sol"), totals=document.get("totals"), notes=document.get("notes", []))


def no_solution_feedback(attempt: int, reason: str) -> AttemptFeedback:
    """The feedback on a proposal that held no usable solution."""
    return AttemptFeedback(attempt=attempt, status=NO_SOLUTION, message=_clip(reason), score=0.0)


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " [...]"
