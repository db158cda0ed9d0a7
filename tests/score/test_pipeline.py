"""pipeline.run for real on the CPU, problem by problem: two small problems (vector_scale with a
registered baseline solution that is wrong, then silu_and_mul), compile modes none. Each problem is
finished (entries saved, traces scored, summary.json rewritten) before the next one's first trace;
the reference is timed once per workload (its eager candidate's trace is the reference's trace); a
failed candidate is named in the summary and the report; a resumed run redoes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

from score_testkit import FIXTURES, VECTOR_SCALE
from solbench.bench.orchestrator import EvalOptions
from solbench.data.loaders import load_problems, load_solution, load_traces
from solbench.data.selection import choose_workloads
from solbench.data.trace import Trace
from solbench.report.render import write_report
from solbench.score import pipeline
from solbench.score.jobs import Job
from solbench.score.summary import RunSummary
from solbench.sol.hardware import get_hardware

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "solbench" / "dataset" / "problems"
WRONG = FIXTURES / "solutions" / "status" / "off_by_constant.json"  # x * alpha + 1: INCORRECT_NUMERICAL on vector_scale


def run_inputs(tmp_path: Path) -> pipeline.RunInputs:
    first = load_problems([VECTOR_SCALE])[0]
    second = next(p for p in load_problems([BUNDLED / "silu_and_mul_llama3_8b"]) if p.name == "silu_and_mul_llama3_8b")
    options = EvalOptions(device="cpu", trials=1, seed=3, warmup=1, min_iterations=3, max_iterations=20, budget_s=0.2,
                          cache_root=tmp_path / "builds", hardware="H200")
    return pipeline.RunInputs(selection=[(first, choose_workloads(first, "smallest:2")), (second, choose_workloads(second, "smallest:1"))],
                              solutions={}, options=options, device="cpu", spec=get_hardware("H200"), run_dir=tmp_path / "run",
                              baseline_dir=tmp_path / "baselines", registered=[load_solution(WRONG)], compile_modes=(), load_s=0.25)


def test_each_problem_is_scored_and_written_before_the_next_and_the_reference_is_timed_once(tmp_path: Path):
    inputs = run_inputs(tmp_path)
    (first, first_workloads), (second, second_workloads) = inputs.selection
    done = pipeline.prepare_run_dir(inputs.run_dir, resume=False)
    assert pipeline.pending_counts(inputs, pipeline.open_store(inputs)[0], done) == 2 + 2 + 1  # eager and the registered one, then silu's eager
    summaries_when_done: list[tuple[str, RunSummary]] = []
    seen: list[tuple[str, str]] = []

    def problem_done(name: str) -> None:
        summaries_when_done.append((name, RunSummary.model_validate_json((inputs.run_dir / "summary.json").read_text())))

    def on_trace(job: Job, trace: Trace) -> None:
        seen.append((job.problem.name, job.tag))

    outcome = pipeline.run(inputs, done, on_trace, lambda job, message: None, report=write_report, on_problem_done=problem_done)

    assert [name for name, _ in summaries_when_done] == [first.name, second.name]
    early = summaries_when_done[0][1]
    assert early.progress == {"problems": 2, "finished": 1, "complete": False}
    assert {w.problem for w in early.workloads} == {first.name}  # the first problem scored, the second not yet begun
    assert all(w.score is not None and w.status == "PASSED" and w.baseline_candidate == "eager" for w in early.workloads)
    assert seen.index((second.name, "eager")) > max(i for i, item in enumerate(seen) if item[0] == first.name)

    final = RunSummary.model_validate_json((inputs.run_dir / "summary.json").read_text())
    assert final.progress == {"problems": 2, "finished": 2, "complete": True}
    assert {w.problem for w in final.workloads} == {first.name, second.name} and len(final.workloads) == 3
    # The registered candidate failed: named with its status and the first line of its error.
    (failure,) = final.baseline_failures
    assert (failure.problem, failure.candidate, failure.status, failure.workloads) == (first.name, "off_by_constant", "INCORRECT_NUMERICAL", 2)
    assert failure.detail
    markdown = (inputs.run_dir / "report.md").read_text()
    assert "## Baseline candidates that failed" in markdown and f"| {first.name} | off_by_constant | INCORRECT_NUMERICAL | 2 |" in markdown
    assert "off_by_constant" in (inputs.run_dir / "report.html").read_text()
    # Phases: the load time given, and evaluation time by phase.
    assert final.phases_s["load"] == 0.25 and final.phases_s["correctness"] > 0 and final.phases_s["timing"] > 0
    assert "compile" not in final.phases_s  # no torch.compile candidate in this run

    # The reference was evaluated once per workload: its eager candidate's trace is its trace in the run.
    candidates = load_traces(inputs.baseline_dir / "H200.traces.jsonl")
    eager = [t for t in candidates if t.solution and t.solution.endswith("-reference")]
    assert sorted((t.definition, t.workload.uuid) for t in eager) == sorted(
        [*((first.name, w.uuid) for w in first_workloads), *((second.name, w.uuid) for w in second_workloads)])
    run_traces = load_traces(inputs.run_dir / "traces.jsonl")
    assert sorted((t.definition, t.workload.uuid, t.evaluation.performance.latency_ms) for t in run_traces) == sorted(
        (t.definition, t.workload.uuid, t.evaluation.performance.latency_ms) for t in eager)
    assert outcome.errors == []

    # Resumed: nothing left to evaluate, nothing appended.
    before = (inputs.run_dir / "traces.jsonl").read_text()
    inputs.resume = True
    done = pipeline.prepare_run_dir(inputs.run_dir, resume=True)
    assert pipeline.pending_counts(inputs, pipeline.open_store(inputs)[0], done) == 0
    again = pipeline.run(inputs, done, lambda job, trace: seen.append(("again", job.tag)), lambda job, message: None)
    assert seen[-1][0] != "again" and (inputs.run_dir / "traces.jsonl").read_text() == before
    assert len(again.summary.workloads) == 3 and again.summary.progress["complete"] is True


def test_compiled_candidates_are_compiled_ahead_into_the_cache_beside_the_baselines(tmp_path: Path):
    """torch.compile candidates compiled ahead (one process; on the CPU only when asked) into
    BASELINES/compile-cache/<hardware>/, which the candidate's worker shares: the candidate passes
    and the run says how many were compiled ahead."""
    inputs = run_inputs(tmp_path)
    first, workloads = inputs.selection[0]
    inputs.selection = [(first, workloads[:1])]
    inputs.registered, inputs.compile_modes, inputs.compile_ahead = [], ("default",), 1
    outcome = pipeline.run(inputs, pipeline.prepare_run_dir(inputs.run_dir, resume=False), lambda job, trace: None, lambda job, message: None)
    (row,) = outcome.summary.workloads
    entry = pipeline.open_store(inputs)[0].entry(first.name, row.workload)
    assert [(c.name, c.status) for c in entry.candidates] == [("eager", "PASSED"), ("compile-default", "PASSED")]
    (note,) = [note for note in outcome.summary.notes if note.startswith("compiled ahead: 1 candidate(s) in 1 process(es)")]
    paused = re.search(r"paused for (\d+) timed request\(s\), [\d.]+ s waited for their device work to drain, (\d+) stop", note)
    assert paused is not None and int(paused.group(1)) >= 2 and int(paused.group(2)) >= 1, note  # on a CPU: process groups stopped
    cache = inputs.baseline_dir / "compile-cache" / "H200"
    assert any((cache / "inductor").rglob("*")) and outcome.summary.phases_s["compile ahead"] > 0
    logged, pauses = [json.loads(line) for line in (inputs.run_dir / pipeline.COMPILE_LOG).read_text().splitlines()]
    assert pauses["pauses"] == int(paused.group(1)) and pauses["stopped"] == int(paused.group(2))  # the note's figures, in the log too
    assert (logged["problem"], logged["mode"], logged["error"]) == (first.name, "default", None) and logged["seconds"] > 0


def test_problems_are_planned_by_how_costly_their_compiled_candidates_look(tmp_path: Path):
    """Problems without compiled candidates first, then fewest matmuls and convolutions (a convolution
    counting 3), read in torch calls and in extracted references' aten calls alike; a decorator is no
    matmul; ties keep the selection's order; runs without compiled candidates keep their order."""
    from solbench.bench.orchestrator import reference_solution
    from solbench.data.problem import Problem

    def plan(name: str, reference: str, compiled: bool = True) -> pipeline.ProblemPlan:
        problem = load_problems([VECTOR_SCALE])[0]
        problem = Problem(problem.definition.model_copy(update={"name": name, "reference": reference}), problem.workloads)
        tags = ["eager", "compile-default"] if compiled else ["eager"]
        return pipeline.ProblemPlan(problem, candidates=[Job(problem, reference_solution(problem), [], tag=tag) for tag in tags])

    gemm = "def run(a, b):\n    return a @ b\n"
    conv = "import torch\ndef run(x, w):\n    return torch.nn.functional.conv2d(x, w).matmul(w)\n"
    norm = "import torch\n@torch.no_grad()\ndef run(x):\n    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
    aten_conv = ("import torch\ndef run(x, w, b):\n    y = torch.ops.aten.conv2d.default(x, w, b, [1, 1], [1, 1])\n"
                 "    return torch.ops.aten.convolution_backward.default(y, x, w, [0], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])\n")
    aten_mlp = ("import torch\ndef run(x, w1, w2):\n    h = torch.ops.aten.linear.default(x, w1)\n"
                "    return torch.ops.aten.mm.default(torch.ops.aten.silu.default(h), w2)\n")
    assert [pipeline.compile_cost(plan("p", text))[0] for text in (norm, gemm, conv, aten_conv, aten_mlp)] == [1, 2, 5, 7, 3]
    assert pipeline.compile_cost(plan("p", conv, compiled=False)) == (0, 0)
    plans = [plan("aten_conv", aten_conv), plan("conv", conv), plan("gemm", gemm), plan("eager", conv, compiled=False), plan("norm", norm),
             plan("aten_mlp", aten_mlp), plan("tail", gemm)]
    assert [p.problem.name for p in pipeline.cheapest_first(plans)] == ["eager", "norm", "gemm", "tail", "aten_mlp", "conv", "aten_conv"]
    eager_only = [plan("conv", conv, False), plan("norm", norm, False)]
    assert [p.problem.name for p in pipeline.cheapest_first(eager_only)] == ["conv", "norm"]
