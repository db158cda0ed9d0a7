"""Baseline entries: the fastest correct candidate, verdicts, reuse, and the store on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from score_testkit import make_trace
from solbench.score.baselines import (AUDIT, NO_BASELINE, NO_BOUND, OPEN, SOLVED, BaselineFile, candidate_result, candidate_solutions,
                                      definition_hash, load_baselines, make_entry, save_baselines, trace_id)
from solbench.score.build import missing_workloads


def test_the_fastest_correct_candidate_sets_t_b(vector_scale):
    results = [candidate_result("eager", make_trace("vector_scale", "ref", "w1", latency=4.0, sol=1.0)),
               candidate_result("compile-default", make_trace("vector_scale", "cmp", "w1", latency=3.0, sol=1.0)),
               candidate_result("fast-but-wrong", make_trace("vector_scale", "bad", "w1", status="INCORRECT_NUMERICAL", log="mismatch at 3"))]
    entry = make_entry(vector_scale, "w1", results, sol_ms=1.0)
    assert entry.baseline_ms == 3.0 and entry.candidate == "compile-default" and entry.reference_ms == 4.0 and entry.verdict == OPEN
    assert results[2].latency_ms is None and results[2].detail == "mismatch at 3"
    assert all(len(r.trace_id) == 16 for r in results)


def test_a_trusted_candidate_faster_than_sol_counts_and_marks_the_bound_for_audit(vector_scale):
    hack = make_trace("vector_scale", "ref", "w1", status="REWARD_HACK", latency=0.5, sol=1.0, log="REWARD_HACK [faster-than-sol]: ...")
    entry = make_entry(vector_scale, "w1", [candidate_result("eager", hack)], sol_ms=1.0)
    assert entry.baseline_ms == 0.5 and entry.verdict == AUDIT


@pytest.mark.parametrize(("baseline", "sol", "expected"), [(1.04, 1.0, SOLVED), (1.2, 1.0, OPEN), (2.0, None, NO_BOUND)])
def test_verdicts(vector_scale, baseline, sol, expected):
    result = candidate_result("eager", make_trace("vector_scale", "ref", "w1", latency=baseline, sol=sol))
    assert make_entry(vector_scale, "w1", [result], sol_ms=sol).verdict == expected


def test_no_correct_candidate_is_no_baseline(vector_scale):
    result = candidate_result("eager", make_trace("vector_scale", "ref", "w1", status="RUNTIME_ERROR", log="boom"))
    entry = make_entry(vector_scale, "w1", [result], sol_ms=1.0)
    assert entry.baseline_ms is None and entry.verdict == NO_BASELINE


def test_entries_are_reused_only_while_current(vector_scale):
    store = BaselineFile(hardware="cpu-x", device="cpu")
    w16, w64 = vector_scale.workloads[:2]
    store.put(make_entry(vector_scale, w16.uuid, [candidate_result("eager", make_trace("vector_scale", "r", w16.uuid, latency=2.0, sol=1.0))], 1.0))
    assert missing_workloads(store, vector_scale, [w16, w64], candidates=["eager"]) == [w64]
    assert missing_workloads(store, vector_scale, [w16], candidates=["eager", "compile-default"]) == [w16]  # a candidate asked for now
    assert missing_workloads(store, vector_scale, [w16], rebuild=True) == [w16]
    store.entries[0].definition_hash = "changed"
    assert missing_workloads(store, vector_scale, [w16], candidates=["eager"]) == [w16]


def test_store_round_trip_and_malformed_file(tmp_path: Path, vector_scale):
    store = BaselineFile(hardware="cpu-x", device="cpu", notes=["a note"])
    store.put(make_entry(vector_scale, "w1", [candidate_result("eager", make_trace("vector_scale", "r", "w1", latency=2.0, sol=1.0))], 1.0))
    path = tmp_path / "cpu-x.json"
    save_baselines(path, store)
    loaded = load_baselines(path)
    assert loaded.entry("vector_scale", "w1").baseline_ms == 2.0 and loaded.notes == ["a note"] and loaded.updated
    assert load_baselines(tmp_path / "absent.json") is None
    path.write_text('{"hardware": "cpu-x"}')
    from solbench.data.errors import SpecError

    with pytest.raises(SpecError) as error:
        load_baselines(path)
    assert "device" in str(error.value.issues[0]) and str(path) in str(error.value.issues[0])


def test_candidates_are_the_reference_compiled_forms_and_registered_solutions(vector_scale):
    from solbench.data.solution import Solution

    mine = Solution.model_validate({"name": "mine", "definition": "vector_scale", "author": "me",
                                    "spec": {"languages": ["pytorch"], "entry_point": "main.py::run"},
                                    "sources": [{"path": "main.py", "content": "def run(x, alpha):\n    return x * alpha\n"}]})
    other = mine.model_copy(update={"name": "other", "definition": "another_problem"})
    found = candidate_solutions(vector_scale, "cuda", [mine, other])
    assert [(name, trusted) for name, _, trusted in found] == [("eager", True), ("compile-default", True),
                                                              ("compile-max-autotune-no-cudagraphs", True), ("mine", False)]
    assert [name for name, _, _ in candidate_solutions(vector_scale, "cpu")] == ["eager"]  # no torch.compile on a CPU by default
    assert len(definition_hash(vector_scale)) == 16 and trace_id(make_trace("a", "b", "c")) != trace_id(make_trace("a", "b", "d"))
