"""build_baselines for real on the CPU: two small problems, compile modes none (the eager reference,
and a registered solution for the first problem). A problem's entries are on disk as soon as all its
candidates have finished, while the next problem is still being evaluated."""

from __future__ import annotations

import json
from pathlib import Path

from score_testkit import FIXTURES, VECTOR_SCALE
from solbench.bench.orchestrator import EvalOptions
from solbench.data.loaders import load_problems, load_solution, load_traces
from solbench.data.selection import choose_workloads
from solbench.data.trace import Status, Trace
from solbench.score.baselines import BaselineFile, load_baselines, trace_id
from solbench.score.build import build_baselines
from solbench.score.jobs import Job

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "solbench" / "dataset" / "problems"
REGISTERED = FIXTURES / "solutions" / "status" / "pytorch_returning.json"  # a correct solution of vector_scale


def test_a_problems_entries_are_saved_once_its_candidates_finish_before_the_next_problem_runs(tmp_path: Path):
    first = load_problems([VECTOR_SCALE])[0]
    second = next(p for p in load_problems([BUNDLED / "silu_and_mul_llama3_8b"]) if p.name == "silu_and_mul_llama3_8b")
    selection = [(first, choose_workloads(first, "smallest:2")), (second, choose_workloads(second, "smallest:1"))]
    store_path = tmp_path / "baselines" / "cpu-test.json"
    store = BaselineFile(hardware="cpu-test", device="cpu")
    options = EvalOptions(device="cpu", trials=1, seed=3, warmup=1, min_iterations=3, max_iterations=20, budget_s=0.2, hidden=2,
                          cache_root=tmp_path / "builds")
    seen: list[tuple[str, str, str]] = []  # (problem, candidate, workload) in the order on_trace saw them
    on_disk_at_second: list[BaselineFile | None] = []
    recorded_at_second: list[list[Trace]] = []
    on_disk_during_first: list[BaselineFile | None] = []

    def on_trace(job: Job, trace: Trace) -> None:
        if job.problem.name == second.name and not on_disk_at_second:
            on_disk_at_second.append(load_baselines(store_path))
            recorded_at_second.append(load_traces(store_path.with_suffix(".traces.jsonl")))
        elif job.problem.name == first.name:
            on_disk_during_first.append(load_baselines(store_path))
        seen.append((job.problem.name, job.tag, trace.workload.uuid))

    outcome = build_baselines(selection, store, store_path, options, registered=[load_solution(REGISTERED)], compile_modes=(),
                              on_trace=on_trace)

    first_uuids = [w.uuid for w in selection[0][1]]
    second_uuids = [w.uuid for w in selection[1][1]]
    assert seen == [*((first.name, "eager", u) for u in first_uuids), *((first.name, "pytorch_returning", u) for u in first_uuids),
                    *((second.name, "eager", u) for u in second_uuids)]  # hidden=0 for baselines: no drawn workloads
    assert on_disk_during_first == [None] * 4  # nothing saved while the first problem's candidates still run

    # When the second problem's first trace arrives, the first problem's entries are on disk already.
    (early,) = on_disk_at_second
    assert early is not None and early.candidates == ["eager"]
    assert [(e.problem, e.workload) for e in early.entries] == [(first.name, u) for u in first_uuids]
    for saved in early.entries:
        final = store.entry(first.name, saved.workload)
        assert saved.baseline_ms is not None and saved.baseline_ms > 0
        assert saved.baseline_ms == final.baseline_ms == min(c.latency_ms for c in saved.candidates)
        assert [(c.name, c.status) for c in saved.candidates] == [("eager", "PASSED"), ("pytorch_returning", "PASSED")]
        assert saved.reference_ms == saved.candidates[0].latency_ms and saved.candidate in ("eager", "pytorch_returning")
    (recorded,) = recorded_at_second
    assert sorted(trace_id(t) for t in recorded) == sorted(c.trace_id for e in early.entries for c in e.candidates)

    # At the end: both problems, the file as the store in memory, the outcome as before.
    last = load_baselines(store_path)
    assert last is not None and last.to_json_dict() == store.to_json_dict()
    assert [(e.problem, e.workload) for e in last.entries] == [*((first.name, u) for u in first_uuids), *((second.name, u) for u in second_uuids)]
    assert [e.model_dump() for e in last.entries[:2]] == [e.model_dump() for e in early.entries]  # the first problem's entries unchanged
    (silu,) = last.entries[2:]
    assert [c.name for c in silu.candidates] == ["eager"] and silu.baseline_ms == silu.reference_ms == silu.candidates[0].latency_ms > 0
    assert outcome.built == 3 and outcome.reused == 0 and outcome.errors == []
    assert sorted(outcome.eager_traces) == sorted([*((first.name, u) for u in first_uuids), *((second.name, u) for u in second_uuids)])
    assert all(t.evaluation.status == Status.PASSED for t in outcome.eager_traces.values())
    traces = load_traces(store_path.with_suffix(".traces.jsonl"))
    assert [(t.definition, t.solution, t.workload.uuid) for t in traces] == [
        *((first.name, f"{first.name}-reference", u) for u in first_uuids), *((first.name, "pytorch_returning", u) for u in first_uuids),
        *((second.name, f"{second.name}-reference", u) for u in second_uuids)]
    assert json.loads(store_path.read_text())["candidates"] == ["eager"]

    # A second build finds every entry current: nothing evaluated, nothing written.
    before = store_path.read_text()
    again = build_baselines(selection, store, store_path, options, registered=[load_solution(REGISTERED)], compile_modes=(),
                            on_trace=lambda job, trace: seen.append(("again", job.tag, trace.workload.uuid)))
    assert again.built == 0 and again.reused == 3 and seen[-1][0] != "again" and store_path.read_text() == before
